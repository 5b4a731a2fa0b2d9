#if Server
import Coffer
import CofferKeyServerCore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird

// MARK: bodies (docs/openapi.yaml)

/// A request body: `members` are the only ones it may have.
protocol RequestBody: Decodable {
    static var members: Set<String> { get }
}

/// A request body read in one pass of the JSON parser: the object's
/// members are checked (none the route does not take, none null) on the
/// same decoder the body's own `Decodable` then reads, so the bytes are
/// parsed once (before, JSONSerialization read them for the check and
/// JSONDecoder again for the value).
struct StrictBody<T: RequestBody>: Decodable {
    struct Member: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    let value: T

    init(from decoder: any Decoder) throws {
        let object = try decoder.container(keyedBy: Member.self)
        for member in object.allKeys {
            guard T.members.contains(member.stringValue), !(try object.decodeNil(forKey: member)) else {
                throw DecodingError.dataCorruptedError(
                    forKey: member, in: object, debugDescription: "a member this body does not take, or null")
            }
        }
        value = try T(from: decoder)
    }
}

struct Health: Codable { let status: String }
struct KeyRequest: RequestBody {
    static let members: Set<String> = ["device"]
    let device: String?
}

struct BatchRequest: RequestBody {
    static let members: Set<String> = ["purposes", "device"]
    let purposes: [String]
    let device: String?
}

/// A released key as the response body: `{"cacheSeconds", "device"?, "key",
/// "keyId", "purpose", "version"}`, members in that (sorted) order. Written
/// straight into the response's buffer — the key's base64 goes from the
/// key's bytes to the buffer and is never a `String` — and quicker than
/// `JSONEncoder` on the route every client calls.
struct KeyResponse {
    let released: ReleasedKey
    /// How long a client may keep the key without asking again.
    let cacheSeconds: Int64

    init(_ released: ReleasedKey, cacheSeconds: Int64) {
        self.released = released
        self.cacheSeconds = cacheSeconds
    }

    func write(into buffer: inout ByteBuffer) {
        buffer.writeStaticString("{\"cacheSeconds\":")
        buffer.writeString(String(cacheSeconds))
        buffer.writeStaticString(",")
        if !released.name.device.isEmpty {
            buffer.writeStaticString("\"device\":")
            JSONText.write(released.name.device, into: &buffer)
            buffer.writeStaticString(",")
        }
        buffer.writeStaticString("\"key\":\"")
        released.key.withUnsafeBytes { key in
            _ = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: (key.count + 2) / 3 * 4) { output in
                Base64.encode(key, into: output)
            }
        }
        buffer.writeStaticString("\",\"keyId\":")
        JSONText.write(released.keyID, into: &buffer)
        buffer.writeStaticString(",\"purpose\":")
        JSONText.write(released.name.purpose, into: &buffer)
        buffer.writeStaticString(",\"version\":")
        buffer.writeString(String(released.version))
        buffer.writeStaticString("}")
    }

    /// One key, or `{"keys":[…]}` for a batch, as a private response.
    static func body(_ keys: [KeyResponse], batch: Bool) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: json(keys, batch: batch)))
    }

    static func json(_ keys: [KeyResponse], batch: Bool) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(160 * keys.count + 16)
        if batch { buffer.writeStaticString("{\"keys\":[") }
        for (index, key) in keys.enumerated() {
            if index > 0 { buffer.writeStaticString(",") }
            key.write(into: &buffer)
        }
        if batch { buffer.writeStaticString("]}") }
        return buffer
    }
}

/// JSON strings (RFC 8259 §7) written into a buffer.
enum JSONText {
    static func write(_ text: String, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("\"")
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            buffer.writeString(text)
            buffer.writeStaticString("\"")
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                buffer.writeInteger(UInt8(ascii: "\\"))
                buffer.writeInteger(byte)
            case 0..<0x20:
                buffer.writeString(String(format: "\\u%04x", byte))
            default:
                buffer.writeInteger(byte)
            }
        }
        buffer.writeStaticString("\"")
    }
}

struct KeyInfo: Codable {
    let purpose: String
    let version: Int
    let keyId: String
}

struct RotateRequest: RequestBody {
    static let members: Set<String> = ["subject", "purpose", "device", "create"]
    let subject: String
    let purpose: String
    let device: String?
    /// A subject the server holds no key for is refused unless true.
    let create: Bool?
}

struct RetireRequest: RequestBody {
    static let members: Set<String> = ["subject", "purpose", "device", "minimumVersion"]
    let subject: String
    let purpose: String
    let device: String?
    let minimumVersion: Int
}

struct DevTokenRequest: RequestBody {
    static let members: Set<String> = ["subject"]
    let subject: String
}

struct UndoShredRequest: RequestBody {
    static let members: Set<String> = ["subject"]
    let subject: String
}

struct ShredRequest: RequestBody {
    static let members: Set<String> = ["subject", "undoWindowSeconds", "create", "dryRun"]
    let subject: String
    let undoWindowSeconds: Int64?
    /// A subject the server holds no key for is refused unless true.
    let create: Bool?
    /// Only say what the shred would destroy, and when.
    let dryRun: Bool?
}

struct ShredResponse: Codable {
    let subject: String
    let shredAt: String
    /// With dryRun: nothing was done; `storedVersions` would be destroyed.
    let dryRun: Bool?
    let storedVersions: Int?
}

/// `GET /v1/admin/keys?subject=`: a subject's keys, never their bytes.
struct SubjectKeysResponse: Codable {
    struct Key: Codable {
        let purpose: String
        let device: String?
        let current: Int
        let minimum: Int
        let versions: Int
    }
    let subject: String
    let keys: [Key]
    let shredAt: String?
    let shredded: Bool

    init(_ keys: SubjectKeys) {
        subject = keys.subject
        self.keys = keys.keys.map {
            Key(
                purpose: $0.purpose, device: $0.device.isEmpty ? nil : $0.device, current: $0.current,
                minimum: $0.minimum, versions: $0.versions)
        }
        shredAt = keys.shredAt.map(ServerKeyStore.timestamp)
        shredded = keys.shredded
    }
}

/// `GET /v1/admin/subjects`: a page of subjects; `next` is the `after` of the next page.
struct SubjectsResponse: Codable {
    let subjects: [String]
    let next: String?
}
#endif
