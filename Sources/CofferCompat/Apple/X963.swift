import Coffer
import Crypto
import Foundation

/// ANSI X9.63 KDF: Hash(Z ‖ counter₃₂ ‖ SharedInfo) for counter = 1, 2, …,
/// concatenated and cut to `size`. Over every hash SecKey names, including
/// SHA-224 (Coffer's own; swift-crypto has none).
enum X963 {
    static func digest(_ hash: AppleAlgorithm.Hash, _ data: [UInt8]) -> [UInt8] {
        switch hash {
        case .sha1: Array(Insecure.SHA1.hash(data: data))
        case .sha224: SHA224.hash(data)
        case .sha256: Array(SHA256.hash(data: data))
        case .sha384: Array(SHA384.hash(data: data))
        case .sha512: Array(SHA512.hash(data: data))
        }
    }

    static func derive(_ hash: AppleAlgorithm.Hash, secret: some ContiguousBytes, sharedInfo: [UInt8], size: Int)
        -> [UInt8]
    {
        let z = secret.withUnsafeBytes { Array($0) }
        var output: [UInt8] = []
        var counter: UInt32 = 1
        while output.count < size {
            output += digest(
                hash,
                z + [
                    UInt8(counter >> 24), UInt8(counter >> 16 & 0xff), UInt8(counter >> 8 & 0xff),
                    UInt8(counter & 0xff),
                ] + sharedInfo)
            counter += 1
        }
        return Array(output.prefix(size))
    }
}
