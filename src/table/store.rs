//! Tables in object stores: `s3://` and `s3a://`, `gs://`, `az://` and `abfss://` (and the
//! other Azure spellings), through the Arrow project's `object_store` client.
//!
//! Credentials and endpoints come from each cloud's usual environment variables (for S3:
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL` for an S3-compatible store, `AWS_PROFILE` from `~/.aws`). Every request
//! has a timeout and failed ones are retried with backoff (`retry`); an error is one line that
//! names the object and what the server said, with every secret of the environment taken out.
//! Requests and bytes are counted (`io`) for the reports.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::TryStreamExt;
use hashbrown::HashMap;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, ObjectStoreScheme, RetryConfig};
use url::Url;

use crate::error::{Error, Result};
use crate::stats::RunStats;
use crate::table::names::HiveParts;

/// An object of a store, with its size (from the listing).
#[derive(Debug)]
pub struct Object {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    pub size: u64,
    /// `scheme://bucket/key`, for messages.
    pub url: String,
    /// The run whose requests to it are counted.
    stats: Arc<RunStats>,
}

/// The schemes read through an object store (`file://` is read as a local path).
const SCHEMES: [&str; 9] = ["s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "gcs"];

/// Whether `table` names an object in a store rather than a local path.
pub fn is_remote(table: &str) -> bool {
    table
        .split_once("://")
        .is_some_and(|(scheme, _)| SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()))
}

/// `file:///x/y` as the local path `/x/y`; any other text as it is.
pub fn local_path(table: &str) -> PathBuf {
    match table.strip_prefix("file://") {
        Some(rest) => Url::parse(table)
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .unwrap_or_else(|| PathBuf::from(rest)),
        None => PathBuf::from(table),
    }
}

/// A table's objects: each Parquet object under `root` (an object, a folder or a glob over
/// keys), with the `k=v` folder names between the folder and the object. `listed`: the
/// folder's keys (relative) and sizes, when already listed.
pub fn list(
    root: &str,
    listed: Option<&[(String, u64)]>,
    stats: &Arc<RunStats>,
) -> Result<Vec<(Arc<Object>, HiveParts)>> {
    let (store, url) = store_for(root)?;
    let key = key_of(&url, root)?;
    if key.contains(['*', '?', '[']) {
        return list_glob(&store, &url, root, &key, stats);
    }
    let listed = match listed {
        Some(l) => l.to_vec(),
        None => list_folder(root, stats)?,
    };
    let base = root.trim_end_matches('/');
    let mut out = Vec::new();
    for (rel, size) in &listed {
        if let Some(parts) = table_file(rel) {
            out.push((object_at(&format!("{base}/{rel}"), *size, stats)?, parts));
        }
    }
    if out.is_empty() && listed.is_empty() && !key.ends_with('/') {
        // Not a folder: the object itself, read whatever its name.
        let prefix = key.trim_end_matches('/');
        let meta = block_on(root, || async {
            count_request(stats, store.head(&ObjectPath::from(prefix)).await)
        })?;
        out.push((object(&store, &url, &meta, stats), Vec::new()));
    }
    if out.is_empty() {
        return Err(Error::NoParquet(root.to_string()));
    }
    Ok(out)
}

/// The objects whose key, or one of whose folders, matches the glob `pattern`; folders are
/// searched as a folder named directly is.
fn list_glob(
    store: &Arc<dyn ObjectStore>,
    url: &Url,
    root: &str,
    pattern: &str,
    stats: &Arc<RunStats>,
) -> Result<Vec<(Arc<Object>, HiveParts)>> {
    let glob =
        glob::Pattern::new(pattern).map_err(|e| Error::Usage(format!("bad glob {root}: {e}")))?;
    let fixed = &pattern[..pattern.find(['*', '?', '[']).unwrap_or(0)];
    let prefix = &fixed[..fixed.rfind('/').unwrap_or(0)];
    let mut out = Vec::new();
    for meta in block_on(root, || list_all(store, prefix, stats))? {
        let key = meta.location.as_ref();
        if glob.matches(key) {
            out.push((object(store, url, &meta, stats), Vec::new()));
            continue;
        }
        let folder = key.match_indices('/').map(|(i, _)| &key[..i]).find(|f| glob.matches(f));
        if let Some(parts) = folder.and_then(|f| table_file(&key[f.len() + 1..])) {
            out.push((object(store, url, &meta, stats), parts));
        }
    }
    if out.is_empty() {
        return Err(Error::NoParquet(format!("glob {root} matched nothing")));
    }
    Ok(out)
}

/// For an object at `rel` below a table's folder: its `k=v` folders if it is one of the
/// table's Parquet files (not hidden, not a checksum), else None.
fn table_file(rel: &str) -> Option<HiveParts> {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let name = parts.pop()?;
    if parts.iter().chain([&name]).any(|p| crate::table::names::is_hidden(p))
        || !crate::table::names::looks_like_parquet(name)
    {
        return None;
    }
    Some(
        parts
            .iter()
            .filter_map(|p| p.split_once('='))
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| {
                (crate::table::names::unescape_path(k), crate::table::names::unescape_path(v))
            })
            .collect(),
    )
}

fn object(
    store: &Arc<dyn ObjectStore>,
    url: &Url,
    meta: &object_store::ObjectMeta,
    stats: &Arc<RunStats>,
) -> Arc<Object> {
    let base = format!("{}://{}", url.scheme(), url.authority());
    let url = format!("{base}/{}", meta.location);
    Arc::new(Object {
        store: store.clone(),
        path: meta.location.clone(),
        size: meta.size,
        url,
        stats: stats.clone(),
    })
}

async fn list_all(
    store: &Arc<dyn ObjectStore>,
    prefix: &str,
    stats: &RunStats,
) -> Result<Vec<object_store::ObjectMeta>, object_store::Error> {
    let prefix = (!prefix.is_empty()).then(|| ObjectPath::from(prefix));
    let mut all: Vec<_> = store.list(prefix.as_ref()).try_collect().await?;
    // A listing answers 1,000 objects a request.
    stats.listed(all.len());
    all.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(all)
}

/// The objects under the folder `url` (recursively): each key relative to it, and its size.
pub fn list_folder(url: &str, stats: &RunStats) -> Result<Vec<(String, u64)>> {
    let (store, parsed) = store_for(url)?;
    let prefix = key_of(&parsed, url)?.trim_end_matches('/').to_string();
    let listed = block_on(url, || list_all(&store, &prefix, stats))?;
    Ok(listed
        .iter()
        .map(|m| {
            (
                m.location
                    .as_ref()
                    .strip_prefix(prefix.as_str())
                    .unwrap_or(m.location.as_ref())
                    .trim_start_matches('/')
                    .to_string(),
                m.size,
            )
        })
        .collect())
}

/// The names one level under the folder `url`: its sub-folders and objects.
pub fn children(url: &str, stats: &RunStats) -> Result<Vec<String>> {
    let (store, parsed) = store_for(url)?;
    let key = key_of(&parsed, url)?;
    let prefix = key.trim_end_matches('/');
    let prefix = (!prefix.is_empty()).then(|| ObjectPath::from(prefix));
    let listed = block_on(url, || async {
        stats.request(0);
        store.list_with_delimiter(prefix.as_ref()).await
    })?;
    let names = listed
        .common_prefixes
        .iter()
        .chain(listed.objects.iter().map(|o| &o.location))
        .filter_map(|p| p.filename().map(str::to_string));
    Ok(names.collect())
}

/// The whole file at `path`: an object store URL, a `file://` URL or a local path (a log or
/// metadata file).
pub fn read_whole(path: &str, stats: &RunStats) -> Result<Bytes> {
    if is_remote(path) {
        return get_all(path, stats);
    }
    let local = local_path(path);
    std::fs::read(&local).map(Bytes::from).map_err(|e| Error::Io { path: local, source: e })
}

/// The whole object at `url` (a small one: a log or metadata file).
pub fn get_all(url: &str, stats: &RunStats) -> Result<Bytes> {
    let (store, parsed) = store_for(url)?;
    let path = ObjectPath::from(key_of(&parsed, url)?.as_str());
    block_on(url, || async {
        count_request(stats, async { store.get(&path).await?.bytes().await }.await)
    })
}

/// The object at `url` copied to a temporary file (a large one: an event log), the file's
/// position at its start. It is fetched in ranges of `DOWNLOAD_PART` bytes, each one request
/// retried on its own and well inside the per-request timeout whatever the object's size.
pub fn download(url: &str, stats: &Arc<RunStats>) -> Result<std::fs::File> {
    use std::io::Seek;
    let (store, parsed) = store_for(url)?;
    let path = ObjectPath::from(key_of(&parsed, url)?.as_str());
    let size = block_on(url, || async { count_request(stats, store.head(&path).await) })?.size;
    let object = Object { store, url: url.to_string(), path, size, stats: stats.clone() };
    let mut file =
        tempfile::tempfile().map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
    copy_into(&object, &mut file, &std::env::temp_dir())?;
    file.rewind().map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
    Ok(file)
}

/// `object` copied to the new file `to`, in ranges of `DOWNLOAD_PART` bytes (as `download`).
pub fn download_to(object: &Object, to: &std::path::Path) -> Result<()> {
    let mut file =
        std::fs::File::create(to).map_err(|source| Error::Io { path: to.to_path_buf(), source })?;
    copy_into(object, &mut file, to)
}

fn copy_into(
    object: &Object,
    out: &mut impl std::io::Write,
    shown: &std::path::Path,
) -> Result<()> {
    let mut at = 0;
    while at < object.size {
        let end = (at + DOWNLOAD_PART).min(object.size);
        let part = get_range(object, at..end)?;
        out.write_all(&part).map_err(|source| Error::Io { path: shown.to_path_buf(), source })?;
        at = end;
    }
    Ok(())
}

/// The bytes per request of `download`.
const DOWNLOAD_PART: u64 = 16 << 20;

/// The object at `url`, of `size` bytes (known from a listing or a table's log: no request
/// made). The key is taken as written after `scheme://authority/`, not percent-decoded: object
/// names such as Spark's `k=a%2Fb` folders are keys as they are.
pub fn object_at(url: &str, size: u64, stats: &Arc<RunStats>) -> Result<Arc<Object>> {
    let (store, parsed) = store_for(url)?;
    let base = format!("{}://{}", parsed.scheme(), parsed.authority());
    let raw = url.splitn(4, '/').nth(3).unwrap_or("");
    let path = ObjectPath::parse(raw).unwrap_or_else(|_| ObjectPath::from(raw));
    Ok(Arc::new(Object { store, url: format!("{base}/{path}"), path, size, stats: stats.clone() }))
}

/// The bytes `range` of `object`.
pub fn get_range(object: &Object, range: Range<u64>) -> Result<Bytes> {
    block_on(&object.url, || async {
        count_request(&object.stats, object.store.get_range(&object.path, range.clone()).await)
    })
}

/// Byte ranges fetched ahead of the readers that will ask for them (`fetch_ahead`), each
/// taken once (`take_ahead`), so that several requests are in flight while the readers count
/// (a reader fetches a column chunk only when it needs it, one request at a time). Ranges a
/// reader fetched itself are claimed, and never fetched ahead after.
#[derive(Default)]
struct Ahead {
    state: Mutex<AheadState>,
    room: std::sync::Condvar,
}

#[derive(Default)]
struct AheadState {
    waiting: Vec<Pending>,
    /// (object URL, range start) of every range fetched so far, by a reader or ahead.
    claimed: hashbrown::HashSet<(String, u64)>,
}

struct Pending {
    url: String,
    range: Range<u64>,
    got: tokio::task::JoinHandle<Result<Bytes, object_store::Error>>,
}

/// Ranges in flight or waiting at most, and their bytes at most (one range over this is
/// fetched alone).
const AHEAD: usize = 8;
const AHEAD_BYTES: u64 = 64 << 20;

fn ahead() -> &'static Ahead {
    static AHEAD_Q: OnceLock<Ahead> = OnceLock::new();
    AHEAD_Q.get_or_init(Ahead::default)
}

/// Start fetching `range` of `object` for a reader to take; waits while the window is full,
/// and fetches nothing once `stop` is set or where a reader has the range already.
pub fn fetch_ahead(object: &Object, range: Range<u64>, stop: &std::sync::atomic::AtomicBool) {
    let q = ahead();
    let mut st = q.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if stop.load(Ordering::Relaxed) || st.claimed.contains(&(object.url.clone(), range.start)) {
            return;
        }
        let bytes: u64 = st.waiting.iter().map(|p| p.range.end - p.range.start).sum();
        if st.waiting.is_empty()
            || (st.waiting.len() < AHEAD && bytes + (range.end - range.start) <= AHEAD_BYTES)
        {
            break;
        }
        st =
            q.room.wait_timeout(st, Duration::from_millis(50)).unwrap_or_else(|e| e.into_inner()).0;
    }
    let Ok(rt) = runtime() else { return };
    let (store, path, r, stats) =
        (object.store.clone(), object.path.clone(), range.clone(), object.stats.clone());
    let got = rt.spawn(async move { count_request(&stats, store.get_range(&path, r).await) });
    st.claimed.insert((object.url.clone(), range.start));
    st.waiting.push(Pending { url: object.url.clone(), range, got });
}

/// The range fetched ahead of `object` that holds `want`, taken (waited for): its range and
/// bytes. None where there is none, or its fetch failed (the reader then fetches it itself,
/// with the client's retries and the one-line error); the range is claimed either way.
pub fn take_ahead(object: &Object, want: &Range<u64>) -> Option<(Range<u64>, Bytes)> {
    let q = ahead();
    let pending = {
        let mut st = q.state.lock().unwrap_or_else(|e| e.into_inner());
        st.claimed.insert((object.url.clone(), want.start));
        let i = st.waiting.iter().position(|p| {
            p.url == object.url && p.range.start <= want.start && want.end <= p.range.end
        })?;
        let p = st.waiting.remove(i);
        q.room.notify_all();
        p
    };
    match runtime().ok()?.block_on(pending.got) {
        Ok(Ok(b)) if b.len() as u64 == pending.range.end - pending.range.start => {
            Some((pending.range, b))
        }
        _ => None,
    }
}

/// Drop what was fetched ahead and not taken, and forget what was claimed: the readers are done.
pub fn end_ahead() {
    let q = ahead();
    let mut st = q.state.lock().unwrap_or_else(|e| e.into_inner());
    for p in st.waiting.drain(..) {
        p.got.abort();
    }
    st.claimed.clear();
    q.room.notify_all();
}

/// Count one request in the run's statistics, and the bytes of its answer.
fn count_request<T: Sized + Received>(
    stats: &RunStats,
    r: Result<T, object_store::Error>,
) -> Result<T, object_store::Error> {
    stats.request(r.as_ref().map_or(0, Received::received));
    r
}

trait Received {
    fn received(&self) -> u64;
}
impl Received for Bytes {
    fn received(&self) -> u64 {
        self.len() as u64
    }
}
impl Received for object_store::ObjectMeta {
    fn received(&self) -> u64 {
        0
    }
}

/// Run the future `op` makes to completion on the store runtime; its error becomes one line
/// about `what`. The client retries a request that fails or gets a 5xx answer; an answer whose
/// body breaks off (a reset or truncated stream) is asked for again here, up to 3 times.
fn block_on<T, F: std::future::Future<Output = Result<T, object_store::Error>>>(
    what: &str,
    op: impl Fn() -> F,
) -> Result<T> {
    let runtime = runtime()?;
    let mut tries = 0;
    loop {
        match runtime.block_on(op()) {
            Err(e) if tries < 3 && body_broke(&e) => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100 << tries));
            }
            r => return r.map_err(|e| store_error(what, &e)),
        }
    }
}

/// Whether `e` is an answer's body that broke off, which the client does not retry.
fn body_broke(e: &object_store::Error) -> bool {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = source {
        let text = s.to_string();
        if text.contains("body error")
            || text.contains("error decoding response body")
            || text.contains("IncompleteMessage")
        {
            return true;
        }
        source = s.source();
    }
    false
}

/// Run `fut` to completion on the runtime the store clients run on (the History Server's
/// client runs there too).
pub fn run<T>(fut: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    runtime()?.block_on(fut)
}

/// The runtime the store clients run on, started on first use.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    let built = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("skewjoin-io")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    built
        .as_ref()
        .map_err(|e| Error::System(format!("cannot start the object store client's threads: {e}")))
}

/// Per request: the time to connect and the time for the whole answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Failed requests (5xx, throttling, resets, timeouts) are retried 4 times, backing off from
/// 100 ms, for at most 30 s in all; 4xx answers are final.
fn retry() -> RetryConfig {
    let backoff = object_store::BackoffConfig {
        init_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(5),
        base: 2.0,
    };
    RetryConfig { backoff, max_retries: 4, retry_timeout: Duration::from_secs(30) }
}

fn client_options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_timeout(REQUEST_TIMEOUT)
        .with_allow_http(allow_http)
}

/// The store that holds `table` (one per bucket and run), and the table's URL.
fn store_for(table: &str) -> Result<(Arc<dyn ObjectStore>, Url)> {
    let url = Url::parse(table).map_err(|e| Error::Usage(format!("{table}: not a URL: {e}")))?;
    let (scheme, _) = ObjectStoreScheme::parse(&url)
        .map_err(|e| Error::Usage(format!("{table}: {}", one_line(&e.to_string()))))?;
    let bucket = format!("{}://{}", url.scheme(), url.authority());
    // A cache of clients keyed by `scheme://bucket`: a client holds its connection pool and
    // credentials, and counts nothing (a run's requests are counted in its `RunStats`).
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let mut stores = STORES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = stores.get(&bucket) {
        return Ok((s.clone(), url));
    }
    let built: Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            s3_builder().with_url(bucket.as_str()).build().map(|s| Arc::new(s) as _)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            gcs_builder().with_url(bucket.as_str()).build().map(|s| Arc::new(s) as _)
        }
        ObjectStoreScheme::MicrosoftAzure => object_store::azure::MicrosoftAzureBuilder::from_env()
            .with_url(table)
            .with_client_options(client_options(false))
            .with_retry(retry())
            .build()
            .map(|s| Arc::new(s) as _),
        _ => {
            return Err(Error::Usage(format!(
                "{table}: tables are read from local paths, s3://, gs:// or az:// URLs"
            )))
        }
    };
    let store = built.map_err(|e| store_error(table, &e))?;
    stores.insert(bucket, store.clone());
    Ok((store, url))
}

/// S3 from the environment: `AWS_*` variables (any `object_store` setting, `AWS_TIMEOUT` and
/// `AWS_CONNECT_TIMEOUT` among them) over `AWS_PROFILE`'s keys and region from `~/.aws`, over
/// the timeouts and retries here. An `http://` endpoint (a store on the local network) is
/// allowed as given.
fn s3_builder() -> object_store::aws::AmazonS3Builder {
    use object_store::aws::AmazonS3ConfigKey as K;
    let mut b = object_store::aws::AmazonS3Builder::new()
        .with_client_options(client_options(false))
        .with_retry(retry());
    for (key, value) in crate::table::store_profile::profile_settings() {
        b = b.with_config(*key, value);
    }
    for (key, value) in env_settings::<K>("AWS_") {
        b = b.with_config(key, value);
    }
    if b.get_config_value(&K::Endpoint).unwrap_or_default().starts_with("http://") {
        b = b.with_config(K::Client(object_store::ClientConfigKey::AllowHttp), "true");
    }
    b
}

/// The environment variables named `PREFIX...` that are `object_store` settings of a store
/// (`AWS_REGION` -> `aws_region`), with their values.
fn env_settings<K: std::str::FromStr>(prefix: &str) -> Vec<(K, String)> {
    std::env::vars()
        .filter(|(name, _)| name.starts_with(prefix))
        .filter_map(|(name, value)| Some((name.to_ascii_lowercase().parse().ok()?, value)))
        .collect()
}

/// Google Cloud Storage from the environment: `GOOGLE_*` variables (any `object_store` setting:
/// `GOOGLE_SERVICE_ACCOUNT` for a key file, `GOOGLE_APPLICATION_CREDENTIALS`, `GOOGLE_TIMEOUT`)
/// over the timeouts and retries here. A key file whose `gcs_base_url` is `http://` (an
/// emulator on the local network, such as fake-gcs-server) is reached as given.
fn gcs_builder() -> object_store::gcp::GoogleCloudStorageBuilder {
    use object_store::gcp::GoogleConfigKey as K;
    let mut b = object_store::gcp::GoogleCloudStorageBuilder::new()
        .with_client_options(client_options(false))
        .with_retry(retry());
    for (key, value) in env_settings::<K>("GOOGLE_") {
        b = b.with_config(key, value);
    }
    if let Ok(path) = std::env::var("SERVICE_ACCOUNT") {
        b = b.with_config(K::ServiceAccount, path);
    }
    if b.get_config_value(&K::ServiceAccount)
        .is_some_and(|p| gcs_base_url(&p).is_some_and(|u| u.starts_with("http://")))
    {
        b = b.with_config(K::Client(object_store::ClientConfigKey::AllowHttp), "true");
    }
    b
}

/// The `gcs_base_url` of a service account key file, if it names one.
fn gcs_base_url(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("gcs_base_url")?.as_str().map(str::to_string)
}

/// The key (path in the bucket) of `table`.
fn key_of(url: &Url, table: &str) -> Result<String> {
    let (_, path) = ObjectStoreScheme::parse(url)
        .map_err(|e| Error::Usage(format!("{table}: {}", one_line(&e.to_string()))))?;
    Ok(path.as_ref().to_string())
}

/// One line about `what` from a store error, with secrets taken out: what the server's error
/// code says (`no such bucket`, `access denied`, `credentials refused`), its code and message,
/// or the client's own words.
fn store_error(what: &str, e: &object_store::Error) -> Error {
    let said = redact(&one_line(&e.to_string()));
    let answer = server_answer(&said);
    let code = answer.as_ref().map_or("", |(c, _)| c.as_str());
    let detail = answer.as_ref().map_or_else(|| said.clone(), |(c, m)| format!("{c}: {m}"));
    let (msg, fault) = match (e, code) {
        (object_store::Error::NotFound { .. }, _) | (_, "NoSuchKey" | "BlobNotFound") => {
            ("no such object".to_string(), "not_found")
        }
        (_, "NoSuchBucket") => ("no such bucket".to_string(), "not_found"),
        (_, "ContainerNotFound") => ("no such container".to_string(), "not_found"),
        (
            _,
            "SignatureDoesNotMatch"
            | "InvalidAccessKeyId"
            | "ExpiredToken"
            | "TokenRefreshRequired"
            | "InvalidToken"
            | "AuthenticationFailed",
        ) => (format!("the credentials were refused ({detail})"), "credentials"),
        (object_store::Error::Unauthenticated { .. }, _) => {
            (format!("the credentials were refused ({detail})"), "credentials")
        }
        (object_store::Error::PermissionDenied { .. }, _)
        | (_, "AccessDenied" | "AuthorizationFailure" | "AuthorizationPermissionMismatch") => {
            (format!("access denied ({detail})"), "access_denied")
        }
        // The client could not load them (a service account file that is not there).
        _ if said.contains("credential error") => (said, "credentials"),
        _ if answer.is_some() => (
            format!("the server answered {}{detail}{}", http_status(&said), retries(&said)),
            "store",
        ),
        _ => (said, "store"),
    };
    Error::Store { what: what.to_string(), msg, code: fault }
}

/// The HTTP status of a failed request quoted in `said` (`503 Service Unavailable, `), if any.
fn http_status(said: &str) -> String {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re =
        RE.get_or_init(|| regex::Regex::new(r"status code: (\d{3}[A-Za-z ]*)").expect("regex"));
    re.captures(said).map(|c| format!("{}, ", c[1].trim())).unwrap_or_default()
}

/// ` (after N retries)` where `said` says the request was retried.
fn retries(said: &str) -> String {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(r"after (\d+) retries").expect("regex"));
    re.captures(said).map(|c| format!(" (after {} retries)", &c[1])).unwrap_or_default()
}

/// The error code and message of an S3, GCS or Azure XML answer quoted in `said`.
fn server_answer(said: &str) -> Option<(String, String)> {
    let tag = |name: &str| -> Option<String> {
        let open = format!("<{name}>");
        let start = said.find(&open)? + open.len();
        let end = said[start..].find("</")? + start;
        Some(said[start..end].trim().to_string())
    };
    Some((tag("Code")?, tag("Message").unwrap_or_default()))
}

fn one_line(s: &str) -> String {
    crate::format::one_line(s, 400)
}

/// `s` with the values of the environment's secret variables, and signatures in URLs,
/// replaced by `***`.
pub fn redact(s: &str) -> String {
    const SECRET: [&str; 7] =
        ["SECRET", "TOKEN", "PASSWORD", "ACCOUNT_KEY", "SAS_KEY", "CLIENT_SECRET", "CREDENTIAL"];
    let mut out = s.to_string();
    for (k, v) in std::env::vars() {
        if v.len() >= 6 && SECRET.iter().any(|w| k.to_ascii_uppercase().contains(w)) {
            out = out.replace(&v, "***");
        }
    }
    for (k, v) in crate::table::store_profile::profile_settings() {
        if v.len() >= 6
            && matches!(
                k,
                object_store::aws::AmazonS3ConfigKey::SecretAccessKey
                    | object_store::aws::AmazonS3ConfigKey::Token
            )
        {
            out = out.replace(v.as_str(), "***");
        }
    }
    static SIG: OnceLock<regex::Regex> = OnceLock::new();
    let sig = SIG.get_or_init(|| regex::Regex::new(r"(?i)((?:x-amz-signature|x-amz-security-token|signature|sig|sv|se|skoid|sktid)=)[^&\s]+").expect("regex"));
    sig.replace_all(&out, "$1***").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_schemes_are_told_from_paths() {
        for t in
            ["s3://b/k", "S3A://b/k", "gs://b/k", "abfss://c@a.dfs.core.windows.net/k", "az://c/k"]
        {
            assert!(is_remote(t), "{t}");
        }
        for t in ["/data/t", "data/t.parquet", "file:///data/t", "c:/x", "http://h/k"] {
            assert!(!is_remote(t), "{t}");
        }
        assert_eq!(local_path("file:///data/a%20b"), PathBuf::from("/data/a b"));
        assert_eq!(local_path("data/t"), PathBuf::from("data/t"));
    }

    #[test]
    fn a_table_folder_keeps_its_parquet_files_and_their_partition_values() {
        assert_eq!(
            table_file("dt=2024-01-01/part-0.parquet"),
            Some(vec![("dt".into(), "2024-01-01".into())])
        );
        assert_eq!(table_file("a.parquet"), Some(vec![]));
        assert_eq!(table_file("_delta_log/0.json"), None);
        assert_eq!(table_file("dt=1/_SUCCESS"), None);
        assert_eq!(table_file(".hidden/a.parquet"), None);
        assert_eq!(table_file("dt=1/part-0.parquet.crc"), None);
        assert_eq!(table_file("x%3Dy=a%2Fb/part-0"), Some(vec![("x=y".into(), "a/b".into())]));
    }

    #[test]
    fn a_servers_error_code_is_said_plainly() {
        let said = "Generic S3 error: GET http://h/b?list-type=2 - 403 Forbidden: <?xml version=\"1.0\"?> <Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>x</RequestId></Error>";
        assert_eq!(
            server_answer(said),
            Some(("AccessDenied".to_string(), "Access Denied".to_string()))
        );
        assert_eq!(server_answer("connection refused"), None);
    }

    #[test]
    fn signatures_in_urls_are_hidden() {
        let s =
            redact("GET https://a.blob.core.windows.net/c/k?sv=2020&sig=abcDEF123%3D&se=x failed");
        assert!(!s.contains("abcDEF123"), "{s}");
        let s = redact("https://b.s3.amazonaws.com/k?X-Amz-Signature=deadbeef&X-Amz-Date=1");
        assert!(!s.contains("deadbeef"), "{s}");
    }
}
