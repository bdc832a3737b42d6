//! One module per output format, each a function writing text: the readable report (`plain`), the
//! `--json` document (`json`), and GitHub workflow commands (`github`).

pub(crate) mod github;
pub(crate) mod json;
pub(crate) mod plain;
