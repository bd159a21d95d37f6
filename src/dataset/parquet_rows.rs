//! Parquet dataset files, as Hugging Face ships SWE-bench Verified (`princeton-nlp/
//! SWE-bench_Verified`, `data/test-*.parquet`): one row per instance, string columns, with
//! `FAIL_TO_PASS`/`PASS_TO_PASS` as JSON-encoded strings. Read with the parquet crate's row
//! API (no arrow); each row becomes a JSON object and goes through the same field checks as
//! JSON rows, so a bad row is reported with its row number and field and the others load.
//! Columns this crate does not know are kept in `extra`.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, FileReader, Length, SerializedFileReader};
use parquet::record::{Field, Row};
use serde_json::{Map, Number, Value};

use super::json_rows::{instance_from_value, Located};
use super::{InputProblem, LoadError};

pub(super) fn load(path: &Path) -> Result<Located<super::Instance>, LoadError> {
    let file = File::open(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let whole_file = |message: String| {
        LoadError::Invalid(InputProblem::new(path.to_path_buf(), None, None, message))
    };
    let source = Budgeted::new(file);
    let file_len = source.len;
    let reader = SerializedFileReader::new(source)
        .map_err(|e| whole_file(format!("not a readable Parquet file: {e}")))?;
    // The reader asserts (panics) on a column chunk whose offsets are negative; such a file
    // is corrupt, and says so here with the chunk it names.
    for (g, group) in reader.metadata().row_groups().iter().enumerate() {
        for column in group.columns() {
            let start = column
                .dictionary_page_offset()
                .unwrap_or_else(|| column.data_page_offset());
            let len = column.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(len).ok())
                .and_then(|(s, l)| s.checked_add(l));
            if end.is_none_or(|end| end > file_len) {
                return Err(whole_file(format!(
                    "corrupt Parquet metadata: row group {g}, column {}: bytes {start}..+{len} lie outside the file",
                    column.column_path()
                )));
            }
        }
    }
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| whole_file(format!("cannot read the rows: {e}")))?;
    let mut out = Located::default();
    let mut read = 0usize;
    // Any other assertion in the third-party decoder is caught too: a corrupt file is an
    // error naming it, and the rows read before the damage are kept.
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        read_rows(path, rows, &mut out, &mut read)
    }));
    if let Err(panic) = finished {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown failure".into());
        out.problems.push(InputProblem::new(
            path.to_path_buf(),
            Some(read + 1),
            None,
            format!("the Parquet decoder failed on this row ({what}); rows after it are not read"),
        ));
    }
    Ok(out)
}

/// A Parquet source with a reading budget. Corrupt metadata can send the decoder around a
/// loop that reads the same bytes, or the end of the file, for hours (found by fuzzing: a
/// page header skip that met end-of-file ten thousand times a second). A well-formed file
/// reads each byte a few times at most, so the decoder gets
/// [`READ_FACTOR`] × the file + [`READ_SLACK`] bytes and [`EOF_READS`] reads at end-of-file;
/// past either, reads fail and the file is reported as corrupt.
struct Budgeted {
    file: File,
    len: u64,
    budget: Arc<Budget>,
}

/// See [`Budgeted`].
const READ_FACTOR: u64 = 64;
/// See [`Budgeted`].
const READ_SLACK: u64 = 256 << 20;
/// See [`Budgeted`].
const EOF_READS: u64 = 10_000;

struct Budget {
    bytes: AtomicU64,
    eof_reads: AtomicU64,
}

impl Budget {
    /// Takes `n` bytes (or one end-of-file read when `n` is 0) from the budget.
    fn take(&self, n: u64) -> std::io::Result<()> {
        let (left, what) = if n == 0 {
            (&self.eof_reads, 1)
        } else {
            (&self.bytes, n)
        };
        left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
            l.checked_sub(what)
        })
        .map(|_| ())
        .map_err(|_| {
            std::io::Error::other(
                "the decoder kept reading far past what the file holds (corrupt metadata)",
            )
        })
    }
}

impl Budgeted {
    fn new(file: File) -> Self {
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let budget = Budget {
            bytes: AtomicU64::new(len.saturating_mul(READ_FACTOR).saturating_add(READ_SLACK)),
            eof_reads: AtomicU64::new(EOF_READS),
        };
        Self {
            file,
            len,
            budget: Arc::new(budget),
        }
    }
}

impl Length for Budgeted {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Budgeted {
    type T = BudgetedRead<<File as ChunkReader>::T>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(BudgetedRead {
            inner: self.file.get_read(start)?,
            budget: self.budget.clone(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.budget
            .take(length as u64)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        self.file.get_bytes(start, length)
    }
}

struct BudgetedRead<R> {
    inner: R,
    budget: Arc<Budget>,
}

impl<R: Read> Read for BudgetedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.budget.take(n as u64)?;
        Ok(n)
    }
}

fn read_rows(
    path: &Path,
    rows: parquet::record::reader::RowIter<'_>,
    out: &mut Located<super::Instance>,
    read: &mut usize,
) {
    for (i, row) in rows.enumerate() {
        *read = i;
        let line = Some(i + 1);
        let problem = |field: Option<String>, message: String| {
            InputProblem::new(path.to_path_buf(), line, field, message)
        };
        match row {
            Ok(row) => match instance_from_value(row_to_json(&row)) {
                Ok(inst) => out.items.push((inst, line)),
                Err((field, message)) => out.problems.push(problem(field, message)),
            },
            Err(e) => {
                // A broken page ends the readable part of the file.
                out.problems.push(problem(
                    None,
                    format!("cannot decode this row or any after it: {e}"),
                ));
                break;
            }
        }
    }
}

fn row_to_json(row: &Row) -> Value {
    let map: Map<String, Value> = row
        .get_column_iter()
        .map(|(k, f)| (k.clone(), field_to_json(f)))
        .collect();
    Value::Object(map)
}

/// A Parquet value as JSON: strings stay strings (binary columns are decoded as UTF-8 with
/// invalid bytes replaced), numbers stay numbers, dates and times become their text.
fn field_to_json(f: &Field) -> Value {
    let number = |n: Option<Number>| n.map_or(Value::Null, Value::Number);
    match f {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(n) => Value::from(*n),
        Field::Short(n) => Value::from(*n),
        Field::Int(n) => Value::from(*n),
        Field::Long(n) => Value::from(*n),
        Field::UByte(n) => Value::from(*n),
        Field::UShort(n) => Value::from(*n),
        Field::UInt(n) => Value::from(*n),
        Field::ULong(n) => Value::from(*n),
        Field::Float16(n) => number(Number::from_f64(f64::from(*n))),
        Field::Float(n) => number(Number::from_f64(f64::from(*n))),
        Field::Double(n) => number(Number::from_f64(*n)),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => Value::String(String::from_utf8_lossy(b.data()).into_owned()),
        Field::Group(row) => row_to_json(row),
        Field::ListInternal(list) => {
            Value::Array(list.elements().iter().map(field_to_json).collect())
        }
        Field::MapInternal(map) => Value::Object(
            map.entries()
                .iter()
                .map(|(k, v)| {
                    let key = match field_to_json(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, field_to_json(v))
                })
                .collect(),
        ),
        other => Value::String(other.to_string().trim_matches('"').to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use super::*;

    /// Writes a file shaped like Hugging Face's SWE-bench Verified (string columns, test lists
    /// as JSON strings) plus one column this crate does not know.
    fn write_fixture(path: &Path) {
        let schema = parse_message_type(
            "message schema {
                OPTIONAL BYTE_ARRAY repo (UTF8);
                OPTIONAL BYTE_ARRAY instance_id (UTF8);
                OPTIONAL BYTE_ARRAY base_commit (UTF8);
                OPTIONAL BYTE_ARRAY patch (UTF8);
                OPTIONAL BYTE_ARRAY version (UTF8);
                OPTIONAL BYTE_ARRAY FAIL_TO_PASS (UTF8);
                OPTIONAL BYTE_ARRAY PASS_TO_PASS (UTF8);
                OPTIONAL BYTE_ARRAY hints_text (UTF8);
                OPTIONAL INT64 stars;
            }",
        )
        .unwrap();
        let file = File::create(path).unwrap();
        let props = Arc::new(WriterProperties::builder().build());
        let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).unwrap();
        let mut rg = writer.next_row_group().unwrap();
        // Three rows; the second has a malformed FAIL_TO_PASS, the third a null hints_text.
        let strings: Vec<Vec<Option<&str>>> = vec![
            vec![Some("astropy/astropy"), Some("django/django"), Some("o/r")],
            vec![
                Some("astropy__astropy-12907"),
                Some("django__django-1"),
                Some("o__r-3"),
            ],
            vec![
                Some("d16bfe05a744909de4b27f5875fe0d4ed41ce607"),
                Some("abc"),
                Some("def"),
            ],
            vec![
                Some("diff --git a/x b/x\n"),
                Some(""),
                Some("diff --git a/é b/é\n"),
            ],
            vec![Some("4.3"), Some("3.0"), Some("1.0")],
            vec![
                Some("[\"test_a\", \"test_b\"]"),
                Some("[not json"),
                Some("[]"),
            ],
            vec![Some("[]"), Some("[]"), Some("[\"t\"]")],
            vec![Some("hint"), Some(""), None],
        ];
        let mut col_index = 0;
        while let Some(mut col) = rg.next_column().unwrap() {
            if col_index < strings.len() {
                let column = &strings[col_index];
                let values: Vec<ByteArray> = column
                    .iter()
                    .flatten()
                    .map(|s| ByteArray::from(*s))
                    .collect();
                let defs: Vec<i16> = column.iter().map(|v| i16::from(v.is_some())).collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&values, Some(&defs), None)
                    .unwrap();
            } else {
                col.typed::<Int64Type>()
                    .write_batch(&[10, 20, 30], Some(&[1, 1, 1]), None)
                    .unwrap();
            }
            col.close().unwrap();
            col_index += 1;
        }
        rg.close().unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn hugging_face_shaped_rows_load_and_bad_rows_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("test-00000-of-00001.parquet");
        write_fixture(&path);
        let loaded = crate::dataset::load(&path).unwrap();
        assert_eq!(loaded.items.len(), 2, "{:?}", loaded.problems);
        let first = &loaded.items[0];
        assert_eq!(first.instance_id, "astropy__astropy-12907");
        assert_eq!(first.fail_to_pass(), ["test_a", "test_b"]);
        assert_eq!(first.version.as_deref(), Some("4.3"));
        assert_eq!(
            first.extra.get("stars"),
            Some(&Value::from(10)),
            "unknown columns are kept"
        );
        assert_eq!(loaded.items[1].patch, "diff --git a/é b/é\n");
        assert_eq!(loaded.items[1].hints_text, None);
        assert_eq!(loaded.problems.len(), 1);
        let p = &loaded.problems[0];
        assert_eq!(p.location.line, Some(2));
        assert_eq!(p.location.field.as_deref(), Some("FAIL_TO_PASS"));
        assert!(
            p.to_string().contains("test-00000-of-00001.parquet:2"),
            "{p}"
        );
    }

    #[test]
    fn a_file_that_is_not_parquet_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.parquet");
        std::fs::write(&path, b"PAR1 this is not really parquet").unwrap();
        let err = crate::dataset::load(&path).unwrap_err();
        assert!(err.to_string().contains("broken.parquet"), "{err}");
    }

    /// Every single-byte corruption of a valid file, three ways: loading never panics, and each
    /// failure names the file. Corrupt chunk offsets (which the decoder asserts on) are among
    /// them and get their own message.
    #[test]
    fn every_single_byte_corruption_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.parquet");
        write_fixture(&good);
        let bytes = std::fs::read(&good).unwrap();
        let path = dir.path().join("corrupt.parquet");
        let (mut errors, mut offsets, mut decoder) = (0, 0, 0);
        for i in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= mask;
                std::fs::write(&path, &b).unwrap();
                match crate::dataset::load(&path) {
                    Err(e) => {
                        let e = e.to_string();
                        assert!(e.contains("corrupt.parquet"), "byte {i} ^ {mask:#x}: {e}");
                        errors += 1;
                        offsets += usize::from(e.contains("corrupt Parquet metadata"));
                    }
                    Ok(loaded) => {
                        for p in &loaded.problems {
                            let p = p.to_string();
                            assert!(p.contains("corrupt.parquet"), "byte {i} ^ {mask:#x}: {p}");
                            decoder += usize::from(p.contains("Parquet decoder failed"));
                        }
                    }
                }
            }
        }
        eprintln!("{} corruptions: {errors} refused ({offsets} for chunk offsets), {decoder} decoder failures caught", bytes.len() * 3);
        assert!(offsets > 0, "no corruption reached the chunk offset check");
    }
}
