import Crypto
import Foundation

/// Fills `buffer` from the system CSPRNG (through swift-crypto's key
/// generation, so that the same generator serves every secret we make).
func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) {
    var offset = 0
    while offset < buffer.count {
        let key = SymmetricKey(size: .bits256)
        key.withUnsafeBytes { bytes in
            let count = min(bytes.count, buffer.count - offset)
            (buffer.baseAddress! + offset).copyMemory(from: bytes.baseAddress!, byteCount: count)
            offset += count
        }
    }
}
