import Foundation

/// One vector of the age test kit (C2SP CCTV, age-encryption.org/testkit):
/// `key: value` lines, a blank line, then the file.
///
/// ```swift
/// let vector = try CCTVVector(name: "x25519", contents: data)
/// #expect(vector.expect == "success")
/// ```
public struct CCTVVector: Sendable {
    public var name: String
    /// "success", "no match", "HMAC failure", "header failure",
    /// "payload failure" or "armor failure".
    public var expect: String
    /// SHA-256 (hex) of all plaintext a decryptor releases, when given.
    public var payloadSHA256: String?
    public var fileKey: String?
    public var identities: [String]
    public var passphrases: [String]
    public var armored: Bool
    /// "zlib" when `body` must be inflated first.
    public var compression: String?
    public var comment: String?
    public var body: Data

    public struct Malformed: Error, CustomStringConvertible {
        public var description: String
    }

    public init(name: String, contents: Data) throws {
        self.name = name
        guard let separator = contents.firstRange(of: Data("\n\n".utf8)) else {
            throw Malformed(description: "\(name): no blank line after the vector's metadata")
        }
        body = contents[separator.upperBound...]
        var expect: String?
        identities = []
        passphrases = []
        armored = false
        for line in String(decoding: contents[..<separator.lowerBound], as: UTF8.self).split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else {
                throw Malformed(description: "\(name): metadata line without a colon")
            }
            let key = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch key {
            case "expect": expect = value
            case "payload": payloadSHA256 = value
            case "file key": fileKey = value
            case "identity": identities.append(value)
            case "passphrase": passphrases.append(value)
            case "armored": armored = value == "yes"
            case "compressed": compression = value
            case "comment": comment = value
            default: break
            }
        }
        guard let expect else { throw Malformed(description: "\(name): no expect line") }
        self.expect = expect
    }

    /// Loads every vector in `directory` (files without an extension that
    /// are not LICENSE or README).
    public static func load(directory: URL) throws -> [CCTVVector] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { !$0.contains(".") && $0 != "LICENSE" && !$0.hasPrefix("README") }
            .sorted()
        return try names.map {
            try CCTVVector(name: $0, contents: Data(contentsOf: directory.appendingPathComponent($0)))
        }
    }
}
