//! The page reader (`pages`) on Parquet files written here: it takes the chunks of every
//! layout and codec it claims to read, and survives damaged ones. (That its counts equal
//! Arrow's is checked end to end in tests/cli.rs.)

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::reader::{FileReader, SerializedFileReader};

use super::pages::{count_chunk, ColumnChunk, Dict, Scratch, Sink};

/// A page reader sink that adds up the rows it is given.
struct Rows(u64);

impl Sink for Rows {
    fn dict(&mut self, d: &Dict) {
        self.0 += d.used().map(|(_, n)| n as u64).sum::<u64>();
    }
    fn one(&mut self, _: &[u8], rows: u64) {
        self.0 += rows;
    }
}

/// 60,000 rows of an optional string column `opt` (every 7th NULL, 50 values in the first
/// half, 20,000 in the second) and a required one `req` (300 values), in row groups of
/// 25,000 and pages of 1,000 rows.
fn write_opt_req(p: &Path, version: WriterVersion, dict_limit: usize, codec: Compression) {
    let n = 60_000;
    let opt: Vec<Option<String>> = (0..n)
        .map(|i| {
            if i % 7 == 0 {
                None
            } else {
                Some(format!("k{}", (i * 7919) % (if i < 30_000 { 50 } else { 20_000 })))
            }
        })
        .collect();
    let req: Vec<String> = (0..n).map(|i| format!("r{}", i % 300)).collect();
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("opt", arrow_schema::DataType::Utf8, true),
        arrow_schema::Field::new("req", arrow_schema::DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(opt)) as ArrayRef,
            Arc::new(StringArray::from(req)) as ArrayRef,
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_writer_version(version)
        .set_dictionary_page_size_limit(dict_limit)
        .set_data_page_row_count_limit(1000)
        .set_max_row_group_row_count(Some(25_000))
        .set_compression(codec)
        .build();
    crate::write_test_parquet(p, &batch, Some(props));
}

/// v1 and v2 data pages, dictionary pages that overflow into plain pages, NULLs, required
/// columns, tiny pages: the page reader itself takes every chunk of these files (no silent
/// fallback to Arrow), and its counts add up to the rows.
#[test]
fn page_reader_takes_every_chunk_it_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let n = 60_000;
    let cases = [
        ("v1.parquet", WriterVersion::PARQUET_1_0, 1 << 20, Compression::UNCOMPRESSED),
        ("v2.parquet", WriterVersion::PARQUET_2_0, 1 << 20, Compression::UNCOMPRESSED),
        ("fallback.parquet", WriterVersion::PARQUET_1_0, 2048, Compression::UNCOMPRESSED),
        ("fallback2.parquet", WriterVersion::PARQUET_2_0, 2048, Compression::UNCOMPRESSED),
        ("snappy1.parquet", WriterVersion::PARQUET_1_0, 1 << 20, Compression::SNAPPY),
        ("snappy2.parquet", WriterVersion::PARQUET_2_0, 1 << 20, Compression::SNAPPY),
        ("zstd.parquet", WriterVersion::PARQUET_2_0, 2048, Compression::ZSTD(ZstdLevel::default())),
        ("lz4raw.parquet", WriterVersion::PARQUET_1_0, 1 << 20, Compression::LZ4_RAW),
        (
            "gzip.parquet",
            WriterVersion::PARQUET_1_0,
            1 << 20,
            Compression::GZIP(Default::default()),
        ),
    ];
    for (name, version, dict_limit, codec) in cases {
        let p = dir.path().join(name);
        write_opt_req(&p, version, dict_limit, codec);
        let reader = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
        let md = reader.metadata();
        let f = Arc::new(
            crate::table::blob::Blob::open(&crate::table::blob::Location::Local(p.clone()), None)
                .unwrap(),
        );
        let len = f.len();
        let mut scratch = Scratch::default();
        let (mut nulls, mut rows, mut refused) = (0, 0, 0);
        for rg in md.row_groups() {
            for col in 0..2 {
                let descr = md.file_metadata().schema_descr().column(col);
                let mut sink = Rows(0);
                let got = count_chunk(
                    ColumnChunk { file: &f, file_len: len, meta: rg.column(col), descr: &descr },
                    rg.num_rows() as usize,
                    &mut scratch,
                    &mut sink,
                );
                // A v2 writer falls back to DELTA_BYTE_ARRAY, which the page reader leaves to
                // Arrow; every other chunk here it must read itself.
                let Some(got) = got else {
                    assert!(
                        name.starts_with("fallback2") || name.starts_with("zstd"),
                        "{name}: page reader refused column {col}"
                    );
                    refused += 1;
                    let s = parquet::file::statistics::Statistics::null_count_opt;
                    let st = rg.column(col).statistics().unwrap();
                    nulls += s(st).unwrap();
                    rows += rg.num_rows() as u64 - s(st).unwrap();
                    continue;
                };
                // Its own page walk for every codec it decodes; GZIP through the parquet crate.
                assert_eq!(got.walked, !name.starts_with("gzip"), "{name}");
                nulls += got.nulls;
                rows += sink.0;
            }
        }
        assert_eq!((nulls, rows + nulls), ((n as u64).div_ceil(7), 2 * n as u64), "{name}");
        assert!(refused < 6, "{name}: {refused} chunks refused");
    }
}

/// The page reader on damaged chunks: every single-byte change at 400 places of the string
/// chunks of a snappy, a zstd and an uncompressed file (page headers, dictionary pages, level
/// and index runs) returns counts or a refusal, never a panic; counts always add up to the
/// chunk's rows.
#[test]
fn page_reader_survives_damaged_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000;
    let vals: Vec<Option<String>> = (0..n)
        .map(|i| if i % 5 == 0 { None } else { Some(format!("v{}", (i * 7919) % 700)) })
        .collect();
    for codec in
        [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default()), Compression::UNCOMPRESSED]
    {
        let p = dir.path().join("d.parquet");
        let batch = RecordBatch::try_from_iter(vec![(
            "k",
            Arc::new(StringArray::from(vals.clone())) as ArrayRef,
        )])
        .unwrap();
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_data_page_row_count_limit(2000)
            .set_max_row_group_row_count(Some(10_000))
            .build();
        crate::write_test_parquet(&p, &batch, Some(props));
        let good = std::fs::read(&p).unwrap();
        let md = SerializedFileReader::new(File::open(&p).unwrap()).unwrap().metadata().clone();
        let descr = md.file_metadata().schema_descr().column(0);
        let mut scratch = Scratch::default();
        let mut rnd = crate::xorshift(0x9e37_79b9);
        for round in 0..400 {
            let rg = md.row_group(round % md.num_row_groups());
            let c = rg.column(0);
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset()) as usize;
            let len = c.compressed_size() as usize;
            let state = rnd();
            let at = start + (state as usize % len);
            let mut bad = good.clone();
            bad[at] ^= 1 << ((state >> 32) % 8);
            let q = dir.path().join("bad.parquet");
            std::fs::write(&q, &bad).unwrap();
            let f = Arc::new(
                crate::table::blob::Blob::open(
                    &crate::table::blob::Location::Local(q.clone()),
                    None,
                )
                .unwrap(),
            );
            let mut sink = Rows(0);
            if let Some(got) = count_chunk(
                ColumnChunk { file: &f, file_len: bad.len() as u64, meta: c, descr: &descr },
                rg.num_rows() as usize,
                &mut scratch,
                &mut sink,
            ) {
                assert_eq!(got.nulls + sink.0, rg.num_rows() as u64, "{codec:?} byte {at}");
            }
        }
    }
}
