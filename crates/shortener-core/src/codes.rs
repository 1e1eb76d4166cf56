//! The `CodeGenerator` port and its CSPRNG implementation.

use crate::domain::ShortCode;

/// Draws new short codes. Collisions are the caller's to retry: a generator never
/// promises uniqueness, only unpredictability.
pub trait CodeGenerator: Send + Sync + 'static {
    fn generate(&self) -> ShortCode;
}

/// Why a `[codes]` configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeGeneratorConfigError {
    #[error("length must be between 1 and 64")]
    Length,
    #[error("alphabet must hold 2 to 256 distinct characters of [A-Za-z0-9_-]")]
    Alphabet,
}

/// Uniform codes over an alphabet, from the operating system's CSPRNG (`getrandom`),
/// by rejection sampling so that no character is more likely than another.
#[derive(Debug, Clone)]
pub struct AlphabetCodeGenerator {
    alphabet: Vec<u8>,
    length: usize,
    /// Largest multiple of the alphabet size that fits in a byte: bytes at or above it
    /// are drawn again, which keeps the distribution uniform.
    accept_below: u16,
}

impl AlphabetCodeGenerator {
    /// # Errors
    /// When the length is outside 1..=64 or the alphabet is too small, has duplicates, or
    /// has characters that cannot appear in a code.
    pub fn new(alphabet: &str, length: usize) -> Result<Self, CodeGeneratorConfigError> {
        if !(1..=64).contains(&length) {
            return Err(CodeGeneratorConfigError::Length);
        }
        let bytes = alphabet.as_bytes().to_vec();
        let mut seen = [false; 256];
        let valid = bytes.len() >= 2
            && bytes.len() <= 256
            && bytes.iter().all(|&b| {
                let fresh = !seen[usize::from(b)];
                seen[usize::from(b)] = true;
                fresh && (b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            });
        if !valid {
            return Err(CodeGeneratorConfigError::Alphabet);
        }
        let size = bytes.len() as u16;
        Ok(Self {
            accept_below: 256 - 256 % size,
            alphabet: bytes,
            length,
        })
    }
}

impl CodeGenerator for AlphabetCodeGenerator {
    fn generate(&self) -> ShortCode {
        let size = self.alphabet.len() as u16;
        let mut code = String::with_capacity(self.length);
        let mut buffer = [0u8; 64];
        while code.len() < self.length {
            // The OS random source does not fail on Linux once booted; if it ever does,
            // no code can be made safely, so stopping is the honest outcome.
            #[allow(clippy::expect_used)] // see the comment above
            getrandom::fill(&mut buffer).expect("the OS random source failed");
            for &byte in &buffer {
                if u16::from(byte) < self.accept_below && code.len() < self.length {
                    code.push(char::from(
                        self.alphabet[usize::from(u16::from(byte) % size)],
                    ));
                }
            }
        }
        #[allow(clippy::expect_used)] // the alphabet was checked in `new`
        ShortCode::parse(&code).expect("alphabet characters form a valid code")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_use_the_alphabet_and_length() {
        let generator = AlphabetCodeGenerator::new("abc", 12).unwrap();
        for _ in 0..100 {
            let code = generator.generate();
            assert_eq!(code.as_str().len(), 12);
            assert!(code.as_str().bytes().all(|b| b"abc".contains(&b)));
        }
    }

    #[test]
    fn codes_are_roughly_uniform() {
        let generator = AlphabetCodeGenerator::new("0123456789", 64).unwrap();
        let mut counts = [0u32; 10];
        for _ in 0..200 {
            for b in generator.generate().as_str().bytes() {
                counts[usize::from(b - b'0')] += 1;
            }
        }
        // 12 800 draws, 1 280 expected per digit; a biased generator would drift far.
        assert!(
            counts.iter().all(|&c| (1_000..1_560).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn bad_configs_are_refused() {
        assert_eq!(
            AlphabetCodeGenerator::new("ab", 0).unwrap_err(),
            CodeGeneratorConfigError::Length
        );
        assert_eq!(
            AlphabetCodeGenerator::new("a", 5).unwrap_err(),
            CodeGeneratorConfigError::Alphabet
        );
        assert_eq!(
            AlphabetCodeGenerator::new("aab", 5).unwrap_err(),
            CodeGeneratorConfigError::Alphabet
        );
        assert_eq!(
            AlphabetCodeGenerator::new("a/b", 5).unwrap_err(),
            CodeGeneratorConfigError::Alphabet
        );
    }
}
