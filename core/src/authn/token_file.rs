//! kube's static token file (`--token-auth-file`): CSV lines of
//! `token,user,uid[,"group1,group2"]`.

use super::UserInfo;
use std::collections::HashMap;

/// Parses the whole file. Lines with an empty token are skipped (kube warns
/// and skips them); a later duplicate token replaces an earlier one.
pub fn parse(content: &str) -> Result<HashMap<String, UserInfo>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::None)
        .from_reader(content.as_bytes());
    let mut tokens = HashMap::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| format!("token file: {e}"))?;
        if record.len() < 3 {
            return Err(format!(
                "token file line {}: needs at least 3 columns (token, user name, user uid), found {}",
                i + 1,
                record.len()
            ));
        }
        if record[0].is_empty() {
            continue;
        }
        let mut user = UserInfo {
            name: record[1].to_string(),
            uid: record[2].to_string(),
            ..Default::default()
        };
        if let Some(groups) = record.get(3).filter(|g| !g.is_empty()) {
            user.groups = groups.split(',').map(str::to_string).collect();
        }
        tokens.insert(record[0].to_string(), user);
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kube_format() {
        let t = parse("tok1,alice,u1,\"dev,ops\"\n# comment\ntok2,bob,u2\n,nobody,u3\n").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t["tok1"].name, "alice");
        assert_eq!(t["tok1"].groups, vec!["dev", "ops"]);
        assert_eq!(t["tok2"].uid, "u2");
        assert!(t["tok2"].groups.is_empty());
    }

    #[test]
    fn too_few_columns_is_an_error() {
        assert!(parse("tok,alice\n").is_err());
    }
}
