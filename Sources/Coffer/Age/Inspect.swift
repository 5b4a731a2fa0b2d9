import Foundation

/// What can be learned about an age file without any key.
public struct AgeFileInfo: Sendable, Hashable, Codable {
    public struct StanzaInfo: Sendable, Hashable, Codable {
        public var type: String
        public var argumentCount: Int
        public var bodySize: Int
    }

    public var armored: Bool
    public var stanzas: [StanzaInfo]
    /// Bytes of the binary header, MAC line included.
    public var headerSize: Int
    /// Bytes after the header: nonce and sealed chunks.
    public var payloadSize: Int64
    public var chunkCount: Int64
    /// The plaintext size the payload implies if it is intact.
    public var plaintextSize: Int64
}

extension Age {
    /// Parses the header and measures the payload of an age file, binary or
    /// armored, without decrypting anything. The header MAC is not checked:
    /// that needs the file key.
    public static func inspect<Source: ByteSource>(_ source: inout Source) throws -> AgeFileInfo {
        try withBinaryFile(source) { reader, armored in
            let header = try Header.read(from: &reader)
            var payload: Int64 = 0
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                if count == 0 { break }
                payload += Int64(count)
            }
            let sealed = max(0, payload - Int64(STREAM.nonceSize))
            let chunks = (sealed + Int64(STREAM.sealedChunkSize) - 1) / Int64(STREAM.sealedChunkSize)
            return AgeFileInfo(
                armored: armored,
                stanzas: header.stanzas.map {
                    .init(type: $0.type, argumentCount: $0.arguments.count, bodySize: $0.body.count)
                },
                headerSize: header.encoded.count,
                payloadSize: payload,
                chunkCount: chunks,
                plaintextSize: max(0, sealed - chunks * Int64(STREAM.tagSize)))
        }
    }
}
