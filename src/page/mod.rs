//! Parquet's page format, decoded by hand where counting reads pages straight from a file
//! (`count::pages`): the page header (`header`), the codecs (`codec`), the RLE / bit-packed
//! hybrid of dictionary indices and definition levels (`hybrid`), and PLAIN byte arrays
//! (`plain`). Every decoder takes bytes that may be corrupt and answers None rather than
//! panic or allocate what the bytes cannot hold.

pub(crate) mod codec;
pub(crate) mod header;
pub(crate) mod hybrid;
pub(crate) mod plain;
