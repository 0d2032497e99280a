pub mod s3_server;
