#ifndef COFFER_CHACHA_H
#define COFFER_CHACHA_H

#include <stddef.h>
#include <stdint.h>

/// ChaCha20-Poly1305 (RFC 8439) from the system's OpenSSL libcrypto
/// (libcrypto.so.3), loaded with dlopen at first use so that nothing links
/// against it: where it is missing, Coffer falls back to swift-crypto.
///
/// Returns 1 when the library and every function used were found.
int coffer_chacha_system_available(void);

/// Seals `length` bytes of `input` into `output` (which may be `input`)
/// and writes the 16-byte tag to `tag`. No associated data. Key 32 bytes,
/// nonce 12. Returns 1 on success, 0 on failure.
int coffer_chacha_system_seal(const uint8_t *key, const uint8_t *nonce,
                              const uint8_t *input, size_t length,
                              uint8_t *output, uint8_t *tag);

/// Decrypts `length` bytes of `input` into `output` (which may be `input`)
/// and checks `tag`. Returns 1 when the tag is correct. On 0 the caller
/// must treat `output` as garbage and release none of it.
int coffer_chacha_system_open(const uint8_t *key, const uint8_t *nonce,
                              const uint8_t *input, size_t length,
                              const uint8_t *tag, uint8_t *output);

#endif
