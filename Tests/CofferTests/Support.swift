import CZlib
import Foundation

enum TestResources {
    static var cctvDirectory: URL {
        Bundle.module.resourceURL!.appendingPathComponent("age-cctv")
    }
}

/// Inflates zlib data (RFC 1950), for the compressed CCTV vectors.
func zlibInflate(_ input: Data) throws -> Data {
    var stream = z_stream()
    guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
        throw InflateError()
    }
    defer { inflateEnd(&stream) }
    var output = Data()
    var input = [UInt8](input)
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var status: Int32 = Z_OK
    try input.withUnsafeMutableBufferPointer { inputBuffer in
        stream.next_in = inputBuffer.baseAddress
        stream.avail_in = UInt32(inputBuffer.count)
        repeat {
            status = chunk.withUnsafeMutableBufferPointer { chunkBuffer in
                stream.next_out = chunkBuffer.baseAddress
                stream.avail_out = UInt32(chunkBuffer.count)
                return inflate(&stream, Z_NO_FLUSH)
            }
            guard status == Z_OK || status == Z_STREAM_END else { throw InflateError() }
            output.append(contentsOf: chunk[..<(chunk.count - Int(stream.avail_out))])
        } while status != Z_STREAM_END
    }
    return output
}

struct InflateError: Error {}

extension Sequence<UInt8> {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
