//! A country database in the MaxMind DB format (version 2.0 of the format), written
//! from a few IPv4 networks, for tests of `visits.geoip_db`: the same layout and
//! `country.iso_code` records as GeoLite2-Country, without a download or a licence key.
//!
//! The file is a binary search tree over the address bits (24-bit records), 16 zero
//! bytes, the data section, and the metadata after the `\xAB\xCD\xEFMaxMind.com` marker.

/// The bytes of a database mapping each `(network, prefix length, country code)` to
/// `{"country": {"iso_code": code}}`; every other IPv4 address has no record.
///
/// # Panics
/// When a prefix length is 0 or above 32.
pub fn country_database(networks: &[([u8; 4], u8, &str)]) -> Vec<u8> {
    // The tree: node 0 is the root; a record is a node, a data offset, or empty.
    #[derive(Clone, Copy)]
    enum Record {
        Empty,
        Node(usize),
        Data(usize),
    }
    let mut nodes: Vec<[Record; 2]> = vec![[Record::Empty; 2]];
    let mut data = Vec::new();
    for &(address, prefix, code) in networks {
        assert!((1..=32).contains(&prefix), "a prefix of 1 to 32 bits");
        let offset = data.len();
        map(&mut data, 1);
        string(&mut data, "country");
        map(&mut data, 1);
        string(&mut data, "iso_code");
        string(&mut data, code);
        let bits = u32::from_be_bytes(address);
        let mut node = 0;
        for depth in 0..prefix {
            let bit = usize::from((bits >> (31 - depth)) & 1 == 1);
            if depth + 1 == prefix {
                nodes[node][bit] = Record::Data(offset);
            } else {
                node = match nodes[node][bit] {
                    Record::Node(next) => next,
                    _ => {
                        nodes.push([Record::Empty; 2]);
                        let next = nodes.len() - 1;
                        nodes[node][bit] = Record::Node(next);
                        next
                    }
                };
            }
        }
    }
    let count = nodes.len();
    let mut file = Vec::new();
    for node in &nodes {
        for record in node {
            let value = match *record {
                Record::Empty => count,
                Record::Node(next) => next,
                Record::Data(offset) => count + 16 + offset,
            };
            let value = u32::try_from(value).expect("a 24-bit record");
            file.extend_from_slice(&value.to_be_bytes()[1..]);
        }
    }
    file.extend_from_slice(&[0; 16]);
    file.extend_from_slice(&data);
    file.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
    map(&mut file, 9);
    string(&mut file, "binary_format_major_version");
    unsigned(&mut file, 5, 2);
    string(&mut file, "binary_format_minor_version");
    unsigned(&mut file, 5, 0);
    string(&mut file, "build_epoch");
    // uint64 is an extended type: 9 - 7 in the byte after the control byte.
    file.extend_from_slice(&[0x04, 0x02]);
    file.extend_from_slice(&1_733_000_000u32.to_be_bytes());
    string(&mut file, "database_type");
    string(&mut file, "Shortener-Test-Country");
    string(&mut file, "description");
    map(&mut file, 1);
    string(&mut file, "en");
    string(&mut file, "countries of the tests");
    string(&mut file, "ip_version");
    unsigned(&mut file, 5, 4);
    string(&mut file, "languages");
    // An array is extended type 11: 11 - 7.
    file.extend_from_slice(&[0x01, 0x04]);
    string(&mut file, "en");
    string(&mut file, "node_count");
    unsigned(&mut file, 6, u64::try_from(count).expect("a count"));
    string(&mut file, "record_size");
    unsigned(&mut file, 5, 24);
    file
}

fn map(out: &mut Vec<u8>, entries: u8) {
    assert!(entries < 29);
    out.push((7 << 5) | entries);
}

fn string(out: &mut Vec<u8>, text: &str) {
    let length = u8::try_from(text.len()).expect("a short string");
    assert!(length < 29, "strings here are under 29 bytes");
    out.push((2 << 5) | length);
    out.extend_from_slice(text.as_bytes());
}

/// An unsigned integer of `kind` (5: uint16, 6: uint32) in as few bytes as it takes.
fn unsigned(out: &mut Vec<u8>, kind: u8, value: u64) {
    let bytes = value.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    let length = u8::try_from(8 - skip).expect("at most 8");
    out.push((kind << 5) | length);
    out.extend_from_slice(&bytes[skip..]);
}
