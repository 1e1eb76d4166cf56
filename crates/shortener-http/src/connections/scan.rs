//! The end of an HTTP/1 request head, found in the bytes as they are read: [`Scan`].

/// How an HTTP/2 connection opens, up to the first empty line of its preface.
pub(super) const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\n";

/// Finds the end of a head: an empty line after at least one non-empty one (leading empty
/// lines, which RFC 9112 §2.2 lets a server ignore, must not end it). Bare `\n` line ends
/// count too, as hyper accepts them.
#[derive(Default)]
pub(super) struct Scan {
    content: bool,
    /// The last byte other than `\r`.
    last: u8,
    /// How many leading bytes match the HTTP/2 preface.
    pub(super) preface: usize,
    pub(super) read: usize,
}

impl Scan {
    /// Takes the next bytes of a head; the index of the byte that ends it, if one does
    /// (the bytes after it are not taken). The same as taking them one at a time
    /// ([`Scan::push`]), a line at a time: the bytes between line ends are only searched
    /// for their last byte other than `\r`.
    pub(super) fn push_all(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut start = 0;
        let end = loop {
            let Some(offset) = memchr::memchr(b'\n', &bytes[start..]) else {
                self.take_line(&bytes[start..]);
                break None;
            };
            let newline = start + offset;
            self.take_line(&bytes[start..newline]);
            let end = self.last == b'\n' && self.content;
            self.last = b'\n';
            if end {
                break Some(newline);
            }
            start = newline + 1;
        };
        let taken = &bytes[..end.map_or(bytes.len(), |end| end + 1)];
        if self.preface == self.read {
            let rest = H2_PREFACE.get(self.read..).unwrap_or_default();
            let same = taken
                .iter()
                .zip(rest)
                .take_while(|(byte, expected)| byte == expected);
            self.preface += same.count();
        }
        self.read += taken.len();
        end
    }

    /// Takes bytes of one line, none of them `\n`.
    fn take_line(&mut self, part: &[u8]) {
        if let Some(&byte) = part.iter().rev().find(|&&byte| byte != b'\r') {
            self.content = true;
            self.last = byte;
        }
    }

    /// Takes one byte; true when it ends the head. The definition [`Scan::push_all`]
    /// keeps, byte by byte.
    #[cfg(test)]
    pub(super) fn push(&mut self, byte: u8) -> bool {
        if self.preface == self.read && H2_PREFACE.get(self.read) == Some(&byte) {
            self.preface += 1;
        }
        self.read += 1;
        if byte == b'\r' {
            return false;
        }
        let end = byte == b'\n' && self.last == b'\n' && self.content;
        if byte != b'\n' {
            self.content = true;
        }
        self.last = byte;
        end
    }
}
