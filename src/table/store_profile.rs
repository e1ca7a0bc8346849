//! S3 settings of a named AWS profile (`AWS_PROFILE`, else `default`), from the AWS CLI's
//! files: keys from `~/.aws/credentials` (or `AWS_SHARED_CREDENTIALS_FILE`), region and
//! endpoint from `~/.aws/config` (or `AWS_CONFIG_FILE`). The environment's own `AWS_*`
//! variables come first; these fill in what they leave out.

use std::path::PathBuf;
use std::sync::OnceLock;

use object_store::aws::AmazonS3ConfigKey as K;

/// The profile's settings, read once per run; none when the files or the profile are missing.
pub(crate) fn profile_settings() -> &'static [(K, String)] {
    static SETTINGS: OnceLock<Vec<(K, String)>> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        let file = |var: &str, name: &str| {
            std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| home.join(".aws").join(name))
        };
        let credentials =
            std::fs::read_to_string(file("AWS_SHARED_CREDENTIALS_FILE", "credentials"))
                .unwrap_or_default();
        let config = std::fs::read_to_string(file("AWS_CONFIG_FILE", "config")).unwrap_or_default();
        let mut out = settings(
            &section(&credentials, &profile),
            &[
                ("aws_access_key_id", K::AccessKeyId),
                ("aws_secret_access_key", K::SecretAccessKey),
                ("aws_session_token", K::Token),
            ],
        );
        let config_name =
            if profile == "default" { profile.clone() } else { format!("profile {profile}") };
        out.extend(settings(
            &section(&config, &config_name),
            &[("region", K::Region), ("endpoint_url", K::Endpoint)],
        ));
        out
    })
}

fn settings(pairs: &[(String, String)], wanted: &[(&str, K)]) -> Vec<(K, String)> {
    wanted
        .iter()
        .filter_map(|(name, key)| {
            pairs.iter().find(|(k, _)| k == name).map(|(_, v)| (*key, v.clone()))
        })
        .collect()
}

/// The `key = value` lines of INI section `[name]`.
fn section(text: &str, name: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(head) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = head.trim() == name;
        } else if inside && !line.starts_with(['#', ';']) {
            if let Some((k, v)) = line.split_once('=') {
                out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_section_is_read_and_others_are_not() {
        let text = "[default]\naws_access_key_id = A\n[profile dev]\nregion = eu-west-1\n# x = y\nendpoint_url=http://127.0.0.1:9000\n";
        assert_eq!(
            section(text, "default"),
            vec![("aws_access_key_id".to_string(), "A".to_string())]
        );
        let dev = section(text, "profile dev");
        assert_eq!(
            settings(&dev, &[("region", K::Region), ("endpoint_url", K::Endpoint)]),
            vec![(K::Region, "eu-west-1".into()), (K::Endpoint, "http://127.0.0.1:9000".into())]
        );
    }
}
