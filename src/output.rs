//! One module per output format, each a function writing text: the readable report (`plain`), the
//! `--json` document (`json`), GitHub workflow commands (`github`), and text from a pull request made
//! harmless in Markdown (`markdown`).

pub(crate) mod github;
pub(crate) mod json;
pub(crate) mod markdown;
pub(crate) mod plain;
pub(crate) mod summary;
