//! A thread as a file: Markdown for people, JSON that imports back.

use cairn_protocol::desktop::ExportFormat;
use cairn_store::Store;

use crate::RuntimeError;

/// The longest file stem a title gives, in characters.
const MAX_STEM_CHARS: usize = 60;

/// A thread exported: what to write, and a file name for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub file_name: String,
    pub contents: String,
}

/// `thread_id` in `format`, named after its title.
pub async fn export(
    store: &Store,
    thread_id: &str,
    format: ExportFormat,
) -> Result<Export, RuntimeError> {
    let export = store.export_json(thread_id).await?;
    let contents = match format {
        ExportFormat::Md => cairn_store::markdown(&export),
        ExportFormat::Json => serde_json::to_string_pretty(&export)
            .map_err(|err| RuntimeError::Export(err.to_string()))?,
    };
    Ok(Export {
        file_name: format!("{}.{}", file_stem(&export.thread.title), format.as_str()),
        contents,
    })
}

/// A file name from a title: lower-case letters, digits and dashes; never empty.
fn file_stem(title: &str) -> String {
    let mut stem = String::new();
    for c in title.chars() {
        if c.is_alphanumeric() {
            stem.extend(c.to_lowercase());
        } else if !stem.is_empty() && !stem.ends_with('-') {
            stem.push('-');
        }
        if stem.chars().count() >= MAX_STEM_CHARS {
            break;
        }
    }
    let stem = stem.trim_end_matches('-');
    if stem.is_empty() {
        "chat".to_owned()
    } else {
        stem.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::file_stem;

    #[test]
    fn file_names_come_from_titles() {
        assert_eq!(
            file_stem("Fix the build: cargo & CI!"),
            "fix-the-build-cargo-ci"
        );
        assert_eq!(file_stem("///"), "chat");
        assert_eq!(file_stem("Über Größe"), "über-größe");
    }
}
