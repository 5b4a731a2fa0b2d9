import Crypto
import Foundation

/// Streaming digests and HMACs of files, for `coffer hash` and `coffer hmac`.
public enum FileDigest {
    public enum Algorithm: String, CaseIterable, Sendable {
        case sha256, sha384, sha512, sha224, sha1, md5

        /// SHA-1 and MD5 are broken for collision resistance: offered only
        /// to check old checksums, and marked insecure wherever shown.
        public var isInsecure: Bool { self == .sha1 || self == .md5 }
    }

    /// The digest of everything `source` yields.
    public static func hash<Source: ByteSource>(_ source: inout Source, algorithm: Algorithm) throws -> [UInt8] {
        switch algorithm {
        case .sha256: try digest(&source, SHA256.self)
        case .sha384: try digest(&source, SHA384.self)
        case .sha512: try digest(&source, SHA512.self)
        case .sha224:
            try {
                var function = SHA224()
                try forEachBlock(&source) { function.update($0) }
                return function.finalize()
            }()
        case .sha1: try digest(&source, Insecure.SHA1.self)
        case .md5: try digest(&source, Insecure.MD5.self)
        }
    }

    /// HMAC of everything `source` yields under `key`.
    public static func hmac<Source: ByteSource>(_ source: inout Source, key: SymmetricKey, algorithm: Algorithm) throws
        -> [UInt8]
    {
        switch algorithm {
        case .sha256: try mac(&source, key, SHA256.self)
        case .sha384: try mac(&source, key, SHA384.self)
        case .sha512: try mac(&source, key, SHA512.self)
        case .sha224: throw CofferError(.unsupported, "HMAC-SHA-224 is not offered; use sha256")
        case .sha1: try mac(&source, key, Insecure.SHA1.self)
        case .md5: try mac(&source, key, Insecure.MD5.self)
        }
    }

    private static func digest<Source: ByteSource, H: HashFunction>(_ source: inout Source, _: H.Type) throws -> [UInt8]
    {
        var function = H()
        try forEachBlock(&source) { function.update(bufferPointer: $0) }
        return Array(function.finalize())
    }

    private static func mac<Source: ByteSource, H: HashFunction>(_ source: inout Source, _ key: SymmetricKey, _: H.Type)
        throws -> [UInt8]
    {
        var function = HMAC<H>(key: key)
        try forEachBlock(&source) { function.update(data: $0) }
        return Array(function.finalize())
    }

    private static func forEachBlock<Source: ByteSource>(
        _ source: inout Source, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { return }
            buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
    }
}
