//! The Spark History Server as input, through its REST API (`/api/v1`): the applications it
//! knows (each with its slowest stage), and one application's event log, downloaded as the zip
//! the server hands out and read like a log on disk.
//!
//! A server URL may name an application the way the API or the web UI does
//! (`.../api/v1/applications/APP[/ATTEMPT]`, `.../history/APP[/ATTEMPT]/jobs/`); `--app` and
//! `--attempt` say it otherwise. An application with attempts is read at its last attempt
//! unless one is named. Every request has a connect timeout (10 s) and a read timeout (60 s);
//! a failure is one line naming the server and what it said.

use std::io::{Seek, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// The applications whose stages are asked for in a listing (one request each); the rest are
/// listed without their slowest stage.
const LIST_STAGES_OF: usize = 50;

/// Whether the event-log argument is a History Server (an http or https URL).
pub fn is_server(arg: &str) -> bool {
    arg.starts_with("http://") || arg.starts_with("https://")
}

/// A server and, when one is named, an application and attempt.
#[derive(Debug, PartialEq)]
pub struct Target {
    /// The server's URL up to where `/api/v1` starts (a proxy's prefix kept), no credentials.
    pub base: String,
    pub app: Option<String>,
    pub attempt: Option<String>,
    /// A user and password from the URL, sent as HTTP basic authentication, never shown.
    auth: Option<Auth>,
}

#[derive(PartialEq)]
struct Auth {
    user: String,
    password: Option<String>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("Auth(***)")
    }
}

impl Target {
    /// Another application of the same server (a baseline named by its id).
    pub fn other_app(&self, app: &str) -> Target {
        let auth =
            self.auth.as_ref().map(|a| Auth { user: a.user.clone(), password: a.password.clone() });
        Target { base: self.base.clone(), app: Some(app.to_string()), attempt: None, auth }
    }
}

/// The server, application and attempt that `url` names, `--app` and `--attempt` over it.
pub fn target(url: &str, app: Option<&str>, attempt: Option<&str>) -> Result<Target> {
    if app == Some("") || attempt == Some("") {
        return Err(Error::Usage("--app and --attempt need a value".into()));
    }
    let mut parsed = url::Url::parse(url)
        .map_err(|e| Error::Usage(format!("{}: not a URL: {e}", shown(url))))?;
    let auth = (!parsed.username().is_empty())
        .then(|| Auth { user: decode(parsed.username()), password: parsed.password().map(decode) });
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    parsed.set_query(None);
    parsed.set_fragment(None);
    let segments: Vec<String> = parsed
        .path_segments()
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let (prefix, named) = split_path(&segments);
    let base = format!(
        "{}{}",
        parsed.origin().ascii_serialization(),
        prefix.iter().map(|s| format!("/{s}")).collect::<String>()
    );
    let named: Vec<String> = named.iter().map(|s| decode(s)).collect();
    // The URL's attempt belongs to the URL's application, not to another named by --app.
    let url_app = named.first().filter(|n| app.is_none_or(|a| a == n.as_str()));
    let url_attempt = url_app.and(named.get(1)).filter(|a| a.chars().all(|c| c.is_ascii_digit()));
    let app = app.map(str::to_string).or(named.first().cloned());
    let attempt = attempt.map(str::to_string).or(url_attempt.cloned());
    if attempt.is_some() && app.is_none() {
        return Err(Error::Usage(
            "--attempt names an attempt of an application: give --app too".into(),
        ));
    }
    Ok(Target { base, app, attempt, auth })
}

/// A percent-encoded URL part, decoded.
fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// The path's prefix before the API or UI part, and the application and attempt after it.
fn split_path(segments: &[String]) -> (&[String], &[String]) {
    let at =
        |w: &[&str]| segments.windows(w.len()).position(|s| s.iter().zip(w).all(|(a, b)| a == b));
    if let Some(i) = at(&["api", "v1"]) {
        let rest = &segments[i + 2..];
        return (
            &segments[..i],
            if rest.first().map(String::as_str) == Some("applications") { &rest[1..] } else { &[] },
        );
    }
    if let Some(i) = at(&["history"]) {
        return (&segments[..i], &segments[i + 1..]);
    }
    (segments, &[])
}

/// A URL as it may be shown: no user or password.
fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => {
            let userinfo = regex::Regex::new(r"//[^/@]*@")
                .map(|r| r.replace(url, "//").into_owned())
                .unwrap_or_default();
            crate::table::store::redact(&userinfo)
        }
    }
}

/// One application of a listing.
#[derive(Debug, Serialize)]
pub struct AppRow {
    pub id: String,
    pub name: String,
    /// The attempt shown (the last), and how many there were.
    pub attempt: Option<String>,
    pub attempts: usize,
    pub duration_ms: i64,
    pub completed: bool,
    pub slowest_stage: Option<StageRow>,
}

#[derive(Debug, Serialize)]
pub struct StageRow {
    pub stage_id: i64,
    pub attempt: i64,
    pub name: String,
    pub duration_ms: i64,
}

/// What the server lists.
#[derive(Debug, Serialize)]
pub struct Listing {
    pub server: String,
    pub applications: Vec<AppRow>,
}

/// The applications the server knows, newest first as it lists them.
pub fn list(t: &Target) -> Result<Listing> {
    let apps = get_json(t, &format!("{}/api/v1/applications", t.base))?;
    let apps = apps
        .as_array()
        .ok_or_else(|| not_history(t, "the application list is not a JSON array"))?;
    let mut rows = Vec::new();
    for (n, a) in apps.iter().enumerate() {
        let id = text(a, "id");
        let attempts = a.get("attempts").and_then(Value::as_array).cloned().unwrap_or_default();
        let last = attempts.first().cloned().unwrap_or_default();
        let attempt = last.get("attemptId").and_then(Value::as_str).map(str::to_string);
        // An application whose stages the server cannot give (its log gone or unreadable)
        // is listed without its slowest stage.
        let slowest_stage = if n < LIST_STAGES_OF {
            slowest_stage(t, &id, attempt.as_deref()).ok().flatten()
        } else {
            None
        };
        rows.push(AppRow {
            name: text(a, "name"),
            attempts: attempts.len(),
            duration_ms: last.get("duration").and_then(Value::as_i64).unwrap_or(0),
            completed: last.get("completed").and_then(Value::as_bool).unwrap_or(false),
            attempt,
            id,
            slowest_stage,
        });
    }
    Ok(Listing { server: t.base.clone(), applications: rows })
}

/// The completed stage that took longest, from the stage list (submission to completion).
fn slowest_stage(t: &Target, app: &str, attempt: Option<&str>) -> Result<Option<StageRow>> {
    let stages = get_json(t, &format!("{}/stages?status=complete", app_url(t, app, attempt)))?;
    let rows = stages.as_array().into_iter().flatten().filter_map(|s| {
        let took = time_of(s, "completionTime")? - time_of(s, "submissionTime")?;
        Some(StageRow {
            stage_id: s.get("stageId")?.as_i64()?,
            attempt: s.get("attemptId").and_then(Value::as_i64).unwrap_or(0),
            name: text(s, "name"),
            duration_ms: took,
        })
    });
    Ok(rows.max_by_key(|r| (r.duration_ms, -r.stage_id)))
}

/// A time as the REST API writes it (`2026-01-01T02:55:45.865GMT`), in ms since the epoch.
fn time_of(v: &Value, key: &str) -> Option<i64> {
    let s = v.get(key)?.as_str()?;
    let t =
        chrono::NaiveDateTime::parse_from_str(s.trim_end_matches("GMT"), "%Y-%m-%dT%H:%M:%S%.3f")
            .ok()?;
    Some(t.and_utc().timestamp_millis())
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn app_url(t: &Target, app: &str, attempt: Option<&str>) -> String {
    let mut u = format!("{}/api/v1/applications/{}", t.base, encode(app));
    if let Some(a) = attempt {
        u = format!("{u}/{}", encode(a));
    }
    u
}

/// A path segment, percent-encoded (an application id is input like any other).
fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20")
}

/// The event log of the application `t` names (at its attempt, else its last), downloaded
/// and unpacked into `dir`: the path of the log file or rolling folder in it.
pub fn fetch_log(t: &Target, dir: &std::path::Path) -> Result<PathBuf> {
    let app = t
        .app
        .as_deref()
        .ok_or_else(|| Error::Internal("fetch_log without an application".into()))?;
    let about = get_json(t, &app_url(t, app, None))?;
    let ids: Vec<String> = about
        .get("attempts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("attemptId")?.as_str().map(str::to_string))
        .collect();
    let attempt = match &t.attempt {
        Some(a) if ids.contains(a) => Some(a.clone()),
        Some(a) => {
            let has = if ids.is_empty() {
                "no numbered attempts".to_string()
            } else {
                format!("attempts {}", ids.join(", "))
            };
            return Err(Error::Usage(format!(
                "{}: application {app} has no attempt {a} (it has {has})",
                t.base
            )));
        }
        None => ids.first().cloned(),
    };
    let zip = download(t, &format!("{}/logs", app_url(t, app, attempt.as_deref())))?;
    unpack(zip, dir).map_err(|e| Error::store(format!("{}: the event log of {app}", t.base), e))
}

/// Unpack the server's zip into `dir`; the one top-level entry (a file or a rolling folder).
fn unpack(file: std::fs::File, dir: &std::path::Path) -> std::result::Result<PathBuf, String> {
    let mut zip = zip::ZipArchive::new(file).map_err(|e| format!("not a zip file ({e})"))?;
    let mut top: Vec<PathBuf> = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| format!("a broken zip file ({e})"))?;
        let Some(name) = entry.enclosed_name() else {
            return Err(format!("an entry outside the archive ({})", entry.name()));
        };
        let Some(first) = name.components().next() else { continue };
        let first = dir.join(first);
        if !top.contains(&first) {
            top.push(first);
        }
        let out = dir.join(&name);
        if entry.is_dir() {
            std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
            continue;
        }
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let mut f = std::fs::File::create(&out).map_err(|e| e.to_string())?;
        std::io::copy(&mut entry, &mut f)
            .map_err(|e| format!("a broken zip entry {} ({e})", name.display()))?;
    }
    match top.len() {
        1 => Ok(top.remove(0)),
        0 => Err("the server sent no event log (an empty zip)".into()),
        n => Err(format!("{n} event logs in one download; name the attempt with --attempt")),
    }
}

fn client() -> Result<&'static reqwest::Client> {
    static CLIENT: std::sync::OnceLock<std::result::Result<reqwest::Client, String>> =
        std::sync::OnceLock::new();
    let c = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())
    });
    c.as_ref().map_err(|e| Error::System(format!("cannot start the HTTP client: {e}")))
}

/// GET `url`: the answer if it is a success, else one line with the server's own message.
async fn get(t: &Target, url: &str) -> Result<reqwest::Response> {
    let mut request = client()?.get(url);
    if let Some(a) = &t.auth {
        request = request.basic_auth(&a.user, a.password.as_ref());
    }
    let r = request.send().await.map_err(|e| unreachable(t, &e))?;
    if r.status().is_success() {
        return Ok(r);
    }
    let status = r.status();
    let body = r.text().await.unwrap_or_default();
    let said = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect::<String>();
    let msg = if status == reqwest::StatusCode::NOT_FOUND && said.starts_with("no such app") {
        said
    } else {
        format!(
            "HTTP {}{}",
            status.as_u16(),
            if said.is_empty() { String::new() } else { format!(": {said}") }
        )
    };
    let code = match status.as_u16() {
        404 => "not_found",
        401 | 403 => "access_denied",
        _ => "store",
    };
    Err(Error::Store {
        what: format!("{} ({})", t.base, url.strip_prefix(&t.base).unwrap_or(url)),
        msg,
        code,
    })
}

fn get_json(t: &Target, url: &str) -> Result<Value> {
    crate::table::store::run(async {
        let body = get(t, url).await?.bytes().await.map_err(|e| unreachable(t, &e))?;
        serde_json::from_slice(&body).map_err(|_| {
            not_history(
                t,
                &format!("{} did not answer JSON", url.strip_prefix(&t.base).unwrap_or(url)),
            )
        })
    })
}

/// GET `url` into a temporary file, as it arrives.
fn download(t: &Target, url: &str) -> Result<std::fs::File> {
    crate::table::store::run(async {
        let mut r = get(t, url).await?;
        let mut f = tempfile::tempfile()
            .map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
        while let Some(chunk) = r.chunk().await.map_err(|e| unreachable(t, &e))? {
            f.write_all(&chunk)
                .map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
        }
        f.rewind().map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
        Ok(f)
    })
}

/// A request that got no answer: the innermost cause (connection refused, a timeout).
fn unreachable(t: &Target, e: &reqwest::Error) -> Error {
    let mut cause = e.to_string();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    let msg = if e.is_timeout() {
        format!("no answer within {} s", READ_TIMEOUT.as_secs())
    } else {
        cause
    };
    Error::store(
        format!("cannot reach the Spark History Server at {}", t.base),
        crate::table::store::redact(&msg),
    )
}

fn not_history(t: &Target, why: &str) -> Error {
    Error::store(t.base.clone(), format!("not a Spark History Server: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_the_server_and_maybe_an_application() {
        let t = target("http://u:pw@h:18080/", None, None).unwrap();
        assert_eq!((t.base.as_str(), &t.app, &t.attempt), ("http://h:18080", &None, &None));
        assert!(t.auth.is_some() && !format!("{t:?}").contains("pw"));
        let t = target("http://h:18080/api/v1/", None, None).unwrap();
        assert_eq!((t.base.as_str(), t.app), ("http://h:18080", None));
        let t = target("http://h:18080/history/app%3A1/", None, None).unwrap();
        assert_eq!(t.app.as_deref(), Some("app:1"));
        assert_eq!(encode("app:1 x"), "app%3A1%20x");
        // The URL's attempt is not given to another application named by --app.
        let t = target("http://h:18080/history/app-2/2/jobs/", Some("app-1"), None).unwrap();
        assert_eq!((t.app.as_deref(), t.attempt), (Some("app-1"), None));
        assert!(!shown("http://alice:hunter2pw@h:99999/").contains("hunter2pw"));
        let t = target("http://h:18080/history/app-1/2/jobs/", None, None).unwrap();
        assert_eq!((t.app.as_deref(), t.attempt.as_deref()), (Some("app-1"), Some("2")));
        let t =
            target("https://gw/spark/api/v1/applications/application_1_2?x=1", None, None).unwrap();
        assert_eq!(
            (t.base.as_str(), t.app.as_deref(), t.attempt),
            ("https://gw/spark", Some("application_1_2"), None)
        );
        let t = target("http://h:18080/history/app-1/jobs/", Some("other"), Some("3")).unwrap();
        assert_eq!((t.app.as_deref(), t.attempt.as_deref()), (Some("other"), Some("3")));
        assert!(target("http://h:18080", None, Some("1")).is_err());
    }

    #[test]
    fn rest_times_are_read() {
        let v: Value = serde_json::json!({"a": "2026-01-01T00:00:01.500GMT"});
        assert_eq!(time_of(&v, "a"), Some(1_767_225_601_500));
    }
}
