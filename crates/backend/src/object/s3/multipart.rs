//! A multipart upload as one PUT of the workload: initiate (POST ?uploads), the parts in
//! order (PUT ?partNumber&uploadId, each body from the payload), complete (POST
//! ?uploadId with the parts' ETags); any failure aborts the upload (DELETE ?uploadId) so
//! no invisible parts are left on the server. Each request has its own retries.

use crate::object::s3::{Body, Keep, S3Client};
use crate::object::{ObjectCompletion, ObjectError, sigv4, xml};

impl S3Client {
    pub(super) fn multipart_put(
        &mut self,
        size: u64,
        data_offset: u64,
        c: &mut ObjectCompletion,
    ) -> Result<(), ObjectError> {
        let part = self.opts.part_size.unwrap_or(size).max(1);
        self.set_path(true);
        self.query.clear();
        self.query.push_str("uploads=");
        self.request(
            "PUT (initiate multipart)",
            "POST",
            Body::Empty,
            None,
            Keep::Xml,
            c,
        )?;
        let Some(id) = xml::first(&self.xml, "UploadId").map(|s| s.into_owned()) else {
            return Err(ObjectError::Status {
                op: "PUT (initiate multipart)",
                target: self.target(),
                endpoint: self.endpoint_name(0),
                status: c.status,
                code: "NoUploadId".into(),
                message: "the answer names no UploadId".into(),
            });
        };
        let mut encoded_id = String::new();
        sigv4::push_encoded(&mut encoded_id, &id, false);
        let r = self.parts(size, part, data_offset, &encoded_id, c);
        if r.is_err() {
            // Best effort: the error that ended the upload is what the user needs.
            self.query.clear();
            self.query.push_str("uploadId=");
            self.query.push_str(&encoded_id);
            let mut ignored = ObjectCompletion::default();
            let _ = self.request(
                "PUT (abort multipart)",
                "DELETE",
                Body::Empty,
                None,
                Keep::Xml,
                &mut ignored,
            );
        }
        r
    }

    fn parts(
        &mut self,
        size: u64,
        part: u64,
        data_offset: u64,
        id: &str,
        c: &mut ObjectCompletion,
    ) -> Result<(), ObjectError> {
        let parts = size.div_ceil(part);
        let mut etags = Vec::with_capacity(parts as usize);
        for n in 1..=parts {
            let len = part.min(size - (n - 1) * part);
            self.query.clear();
            self.query
                .push_str(&format!("partNumber={n}&uploadId={id}"));
            let body = Body::Payload {
                data_offset: iolab_core::rng::mix(&[data_offset, n]),
                len,
            };
            let a = self.request("PUT (part)", "PUT", body, None, Keep::Xml, c)?;
            etags.push(a.head.etag.unwrap_or_default());
            c.bytes += len;
            c.items += 1;
        }
        self.small.clear();
        self.small.extend_from_slice(b"<CompleteMultipartUpload>");
        for (i, etag) in etags.iter().enumerate() {
            self.small.extend_from_slice(
                format!("<Part><PartNumber>{}</PartNumber><ETag>", i + 1).as_bytes(),
            );
            xml::push_escaped(&mut self.small, etag);
            self.small.extend_from_slice(b"</ETag></Part>");
        }
        self.small.extend_from_slice(b"</CompleteMultipartUpload>");
        self.query.clear();
        self.query.push_str("uploadId=");
        self.query.push_str(id);
        self.request(
            "PUT (complete multipart)",
            "POST",
            Body::Small { md5: false },
            None,
            Keep::Xml,
            c,
        )?;
        // S3 may answer 200 and say in the body that completing failed.
        if xml::first(&self.xml, "Error").is_some() || xml::first(&self.xml, "Code").is_some() {
            let (code, message) = self.error_words(c.status);
            return Err(ObjectError::Status {
                op: "PUT (complete multipart)",
                target: self.target(),
                endpoint: self.endpoint_name(0),
                status: c.status,
                code,
                message,
            });
        }
        Ok(())
    }
}
