//! The schema as a list of migrations: [`MIGRATIONS`]`[i]` takes a database from schema
//! version `i` to `i + 1` (SQLite's `user_version`). Never edit a released script; add
//! the next one, and describe it in docs/store-schema.md.

/// Marks a SQLite file as an iolab results database (`PRAGMA application_id`, "iolb").
pub const APPLICATION_ID: i32 = 0x696f_6c62;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Migration scripts, oldest first.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2];

/// Version 2: a phase's typed figures (`PhaseResult::figures`: a training epoch's, a
/// checkpoint's), JSON or NULL.
const V2: &str = "ALTER TABLE phases ADD COLUMN figures TEXT;";

/// Version 1: runs, their phases, per-operation figures with histograms, per-rank rows,
/// errors, and the `op_results` view for ad-hoc queries.
const V1: &str = r#"
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    record_schema   TEXT    NOT NULL,
    label           TEXT,
    kind            TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    started_at_ms   INTEGER NOT NULL,
    finished_at_ms  INTEGER,
    imported        INTEGER NOT NULL DEFAULT 0,
    iolab_version   TEXT    NOT NULL,
    git_revision    TEXT,
    hosts           TEXT    NOT NULL,
    ranks           INTEGER NOT NULL,
    target          TEXT    NOT NULL,
    command         TEXT    NOT NULL,
    kernel          TEXT,
    fs_type         TEXT,
    spec            TEXT    NOT NULL,
    provenance      TEXT    NOT NULL,
    warnings        TEXT    NOT NULL
);
CREATE INDEX runs_by_label ON runs (label, started_at_ms);
CREATE INDEX runs_by_start ON runs (started_at_ms);

CREATE TABLE phases (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    repetition      INTEGER NOT NULL,
    params          TEXT    NOT NULL,
    started_at_ms   INTEGER NOT NULL,
    elapsed_ns      INTEGER NOT NULL,
    first_done_ns   INTEGER NOT NULL,
    ranks           INTEGER NOT NULL,
    workers         INTEGER NOT NULL,
    error_count     INTEGER NOT NULL,
    verify_failures INTEGER NOT NULL,
    interrupted     INTEGER NOT NULL,
    spec            TEXT    NOT NULL,
    cpu             TEXT    NOT NULL,
    extra           TEXT    NOT NULL,
    warnings        TEXT    NOT NULL,
    timeline        TEXT    NOT NULL,
    telemetry       TEXT,
    UNIQUE (run_id, seq)
);

CREATE TABLE phase_ops (
    phase_id             INTEGER NOT NULL REFERENCES phases (id) ON DELETE CASCADE,
    seq                  INTEGER NOT NULL,
    op                   TEXT    NOT NULL,
    ops                  INTEGER NOT NULL,
    bytes                INTEGER NOT NULL,
    iops                 REAL,
    bandwidth            REAL,
    first_done_ops       INTEGER NOT NULL,
    first_done_bytes     INTEGER NOT NULL,
    first_done_iops      REAL,
    first_done_bandwidth REAL,
    errors               INTEGER NOT NULL,
    latency_count        INTEGER NOT NULL,
    latency_min_ns       INTEGER NOT NULL,
    latency_mean_ns      REAL,
    latency_p50_ns       INTEGER NOT NULL,
    latency_p90_ns       INTEGER NOT NULL,
    latency_p99_ns       INTEGER NOT NULL,
    latency_p99_9_ns     INTEGER NOT NULL,
    latency_p99_99_ns    INTEGER NOT NULL,
    latency_max_ns       INTEGER NOT NULL,
    histogram            BLOB    NOT NULL,
    PRIMARY KEY (phase_id, seq)
);

CREATE TABLE phase_ranks (
    phase_id        INTEGER NOT NULL REFERENCES phases (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    rank            INTEGER NOT NULL,
    host            TEXT    NOT NULL,
    threads         INTEGER NOT NULL,
    elapsed_ns      INTEGER NOT NULL,
    first_done_ns   INTEGER NOT NULL,
    ops             TEXT    NOT NULL,
    cpu             TEXT    NOT NULL,
    errors          INTEGER NOT NULL,
    PRIMARY KEY (phase_id, seq)
);

CREATE TABLE phase_errors (
    phase_id        INTEGER NOT NULL REFERENCES phases (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    rank            INTEGER NOT NULL,
    host            TEXT    NOT NULL,
    op              TEXT    NOT NULL,
    path            TEXT    NOT NULL,
    "offset"        INTEGER,
    errno           INTEGER,
    message         TEXT    NOT NULL,
    PRIMARY KEY (phase_id, seq)
);

CREATE VIEW op_results AS
SELECT
    r.id                   AS run_id,
    r.label                AS label,
    r.kind                 AS run_kind,
    r.status               AS status,
    r.started_at_ms        AS run_started_at_ms,
    p.id                   AS phase_id,
    p.seq                  AS phase_seq,
    p.name                 AS phase,
    p.kind                 AS phase_kind,
    p.repetition           AS repetition,
    p.params               AS params,
    p.elapsed_ns           AS elapsed_ns,
    o.op                   AS op,
    o.ops                  AS ops,
    o.bytes                AS bytes,
    o.iops                 AS iops,
    o.bandwidth            AS bandwidth,
    o.bandwidth / 1048576.0 AS mib_per_sec,
    o.first_done_iops      AS first_done_iops,
    o.first_done_bandwidth AS first_done_bandwidth,
    o.errors               AS errors,
    o.latency_mean_ns      AS latency_mean_ns,
    o.latency_p50_ns       AS latency_p50_ns,
    o.latency_p90_ns       AS latency_p90_ns,
    o.latency_p99_ns       AS latency_p99_ns,
    o.latency_p99_9_ns     AS latency_p99_9_ns,
    o.latency_p99_99_ns    AS latency_p99_99_ns,
    o.latency_max_ns       AS latency_max_ns
FROM runs r
JOIN phases p ON p.run_id = r.id
JOIN phase_ops o ON o.phase_id = p.id;
"#;
