//! Integration tests through the dlqf binary, grouped by topic.

mod proxy;
mod stage;
mod util;

mod bad_input;
mod brokers;
mod charging;
mod classification;
mod cli;
mod crosscheck;
mod docs;
mod faults;
mod gen;
mod hostile;
mod html;
mod inputs;
mod kafka;
mod manifest;
mod ordered;
mod postgres;
mod postmortem;
mod profiles;
mod query;
mod rank;
mod real_dumps;
mod redact;
mod replay;
mod returned;
mod s3;
mod sqs;
mod states;
mod targets;
mod templates;
