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
use parquet::schema::types::Type;
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
        read_rows(path, &reader, rows, &mut out, &mut read)
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
    reader: &SerializedFileReader<Budgeted>,
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
            Ok(row) => match row_to_json(&row).map(instance_from_value) {
                Ok(Ok(inst)) => out.items.push((inst, line)),
                Ok(Err(e)) => out.problems.push(e.at(path, line)),
                Err(NotUtf8 { column, byte }) => out.problems.push(problem(
                    Some(column),
                    format!(
                        "bytes that are not UTF-8 (byte {byte} of the value); the row is left \
                         out, not read with the bytes replaced"
                    ),
                )),
            },
            Err(e) if e.to_string().contains("Error reading BYTE_ARRAY as String") => {
                // The decoder refuses a text value that is not UTF-8 without moving past it, so
                // the rows after it cannot be read either; its message would dump the value.
                let total =
                    usize::try_from(reader.metadata().file_metadata().num_rows()).unwrap_or(0);
                let after = total.saturating_sub(i + 1);
                let (column, byte) = match bad_text_column(reader, i) {
                    Some((column, byte)) => (Some(column), byte),
                    None => (None, None),
                };
                out.problems.push(problem(
                    column,
                    format!(
                        "a text value holds bytes that are not UTF-8{}; the Parquet reader \
                         cannot go past it, so this row and the {after} row(s) after it are \
                         not read",
                        byte.map(|b| format!(" (byte {b} of the value)"))
                            .unwrap_or_default()
                    ),
                ));
                break;
            }
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

/// The top-level column whose text value in row `index` (0-based) is not UTF-8, and the 1-based
/// byte where its text stops when the decoder says: each column read alone up to that row (an
/// error path only).
fn bad_text_column(
    reader: &SerializedFileReader<Budgeted>,
    index: usize,
) -> Option<(String, Option<usize>)> {
    let schema = reader.metadata().file_metadata().schema();
    schema.get_fields().iter().find_map(|field| {
        let alone = Type::group_type_builder(schema.name())
            .with_fields(vec![field.clone()])
            .build()
            .ok()?;
        match reader.get_row_iter(Some(alone)).ok()?.nth(index)? {
            Ok(_) => None,
            Err(e) => {
                let text = e.to_string();
                let byte = text
                    .split("valid_up_to: ")
                    .nth(1)
                    .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|n| n.parse::<usize>().ok())
                    .map(|n| n + 1);
                Some((field.name().to_string(), byte))
            }
        }
    })
}

/// A value that is not UTF-8: its row's top-level column and the 1-based byte where it stops.
struct NotUtf8 {
    column: String,
    byte: usize,
}

fn row_to_json(row: &Row) -> Result<Value, NotUtf8> {
    let mut map = Map::new();
    for (k, f) in row.get_column_iter() {
        let value = field_to_json(f).map_err(|byte| NotUtf8 {
            column: k.clone(),
            byte,
        })?;
        map.insert(k.clone(), value);
    }
    Ok(Value::Object(map))
}

/// A Parquet value as JSON: text and byte columns become strings (bytes that are not UTF-8 are
/// an error: the 1-based byte where the text stops), numbers stay numbers, dates and times
/// become their text.
fn field_to_json(f: &Field) -> Result<Value, usize> {
    let number = |n: Option<Number>| n.map_or(Value::Null, Value::Number);
    Ok(match f {
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
        Field::Bytes(b) => match std::str::from_utf8(b.data()) {
            Ok(text) => Value::String(text.to_string()),
            Err(e) => return Err(e.valid_up_to() + 1),
        },
        Field::Group(row) => {
            let mut map = Map::new();
            for (k, f) in row.get_column_iter() {
                map.insert(k.clone(), field_to_json(f)?);
            }
            Value::Object(map)
        }
        Field::ListInternal(list) => Value::Array(
            list.elements()
                .iter()
                .map(field_to_json)
                .collect::<Result<_, _>>()?,
        ),
        Field::MapInternal(map) => {
            let mut out = Map::new();
            for (k, v) in map.entries() {
                let key = match field_to_json(k)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out.insert(key, field_to_json(v)?);
            }
            Value::Object(out)
        }
        other => Value::String(other.to_string().trim_matches('"').to_string()),
    })
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

    /// Writes four rows of five byte-array columns: the instance fields as UTF8 text, and
    /// `problem_statement` as plain bytes.
    fn write_byte_rows(path: &Path, patches: [&[u8]; 4], statements: [&[u8]; 4]) {
        let schema = parse_message_type(
            "message schema {
                REQUIRED BYTE_ARRAY instance_id (UTF8);
                REQUIRED BYTE_ARRAY repo (UTF8);
                REQUIRED BYTE_ARRAY base_commit (UTF8);
                REQUIRED BYTE_ARRAY patch (UTF8);
                REQUIRED BYTE_ARRAY problem_statement;
            }",
        )
        .unwrap();
        let file = File::create(path).unwrap();
        let props = Arc::new(WriterProperties::builder().build());
        let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).unwrap();
        let mut rg = writer.next_row_group().unwrap();
        let bytes = |v: [&[u8]; 4]| v.iter().map(|b| ByteArray::from(b.to_vec())).collect();
        let columns: Vec<Vec<ByteArray>> = vec![
            bytes([b"o__r-1", b"o__r-2", b"o__r-3", b"o__r-4"]),
            bytes([b"o/r"; 4]),
            bytes([b"abc"; 4]),
            bytes(patches),
            bytes(statements),
        ];
        let mut columns = columns.into_iter();
        while let Some(mut col) = rg.next_column().unwrap() {
            let values = columns.next().unwrap();
            col.typed::<ByteArrayType>()
                .write_batch(&values, None, None)
                .unwrap();
            col.close().unwrap();
        }
        rg.close().unwrap();
        writer.close().unwrap();
    }

    /// A byte column that is not UTF-8 used to be read with U+FFFD in place of the bytes: now
    /// its row is left out alone, named with its column, and the others load.
    #[test]
    fn a_byte_value_that_is_not_utf8_leaves_its_row_out_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes.parquet");
        let patches: [&[u8]; 4] = [b"diff a\n", b"diff b\n", b"diff c\n", b"diff d\n"];
        let statements: [&[u8]; 4] = [b"one", b"two", b"th\xffree", "f\u{e9}our".as_bytes()];
        write_byte_rows(&path, patches, statements);
        let loaded = crate::dataset::load(&path).unwrap();
        let ids: Vec<&str> = loaded
            .items
            .iter()
            .map(|i| i.instance_id.as_str())
            .collect();
        assert_eq!(ids, ["o__r-1", "o__r-2", "o__r-4"], "{:?}", loaded.problems);
        assert_eq!(
            loaded.items[2].problem_statement.as_deref(),
            Some("f\u{e9}our")
        );
        assert_eq!(loaded.problems.len(), 1);
        let p = &loaded.problems[0];
        assert_eq!(p.location.line, Some(3));
        assert_eq!(p.location.field.as_deref(), Some("problem_statement"));
        assert!(p.message.contains("byte 3 of the value"), "{p}");
    }

    /// A text value that is not UTF-8: the decoder refuses it without moving past it, so the
    /// rows before it load and the problem names its row, column and byte and says how many
    /// rows after it are not read, without dumping the value.
    #[test]
    fn a_text_value_that_is_not_utf8_is_named_with_the_rows_it_costs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("text.parquet");
        let patches: [&[u8]; 4] = [b"diff a\n", b"diff \xf7b\n", b"diff c\n", b"diff d\n"];
        write_byte_rows(&path, patches, [b"s"; 4]);
        let loaded = crate::dataset::load(&path).unwrap();
        let ids: Vec<&str> = loaded
            .items
            .iter()
            .map(|i| i.instance_id.as_str())
            .collect();
        assert_eq!(ids, ["o__r-1"], "{:?}", loaded.problems);
        assert_eq!(loaded.problems.len(), 1);
        let p = &loaded.problems[0];
        assert_eq!(p.location.line, Some(2));
        assert_eq!(p.location.field.as_deref(), Some("patch"));
        let text = p.to_string();
        assert!(text.contains("text.parquet:2"), "{text}");
        assert!(text.contains("byte 6 of the value"), "{text}");
        assert!(
            text.contains("the 2 row(s) after it are not read"),
            "{text}"
        );
        assert!(
            !text.contains("[100, 105"),
            "no dump of the value's bytes: {text}"
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
