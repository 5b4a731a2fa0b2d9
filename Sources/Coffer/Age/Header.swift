import Crypto
import Foundation

/// The age v1 header: version line, stanzas, MAC (c2sp.org/age, "Header").
struct Header: Sendable {
    static let versionLine = Array("age-encryption.org/v1".utf8)
    static let versionPrefix = Array("age-encryption.org/".utf8)
    /// Limits no honest file reaches. The header cannot be authenticated
    /// until a stanza has been unwrapped, so every stanza an attacker adds
    /// costs the reader work before it can reject the file: bound it.
    static let maximumStanzas = 1024
    static let maximumLineLength = 8192
    static let maximumBodyBytes = 16 * 1024

    var stanzas: [Stanza]
    var mac: [UInt8]

    /// Everything the MAC covers: the header up to and including "---".
    var authenticatedBytes: [UInt8] {
        var output = Header.versionLine + [0x0A]
        for stanza in stanzas { output += stanza.encoded }
        return output + Array("---".utf8)
    }

    var encoded: [UInt8] {
        authenticatedBytes + [0x20] + Base64.encode(mac, padded: false) + [0x0A]
    }

    static func computeMAC(stanzas: [Stanza], fileKey: FileKey) -> [UInt8] {
        let header = Header(stanzas: stanzas, mac: [])
        let key = fileKey.derive(salt: [UInt8](), info: "header")
        return Array(HMAC<SHA256>.authenticationCode(for: header.authenticatedBytes, using: key))
    }

    /// A header for `stanzas`, authenticated with `fileKey`.
    init(stanzas: [Stanza], fileKey: FileKey) {
        self.stanzas = stanzas
        self.mac = Header.computeMAC(stanzas: stanzas, fileKey: fileKey)
    }

    init(stanzas: [Stanza], mac: [UInt8]) {
        self.stanzas = stanzas
        self.mac = mac
    }

    /// Checks the MAC in constant time; throws `headerAuthenticationFailed`.
    func verify(fileKey: FileKey) throws {
        let key = fileKey.derive(salt: [UInt8](), info: "header")
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: authenticatedBytes, using: key) else {
            throw CofferError(
                .headerAuthenticationFailed,
                "the header MAC does not match: the header was modified or the file key is wrong")
        }
    }
}

extension Header {
    private static func fail(_ reason: String) -> CofferError {
        CofferError(.malformedHeader, reason)
    }

    /// Parses a header from `reader`, leaving it at the first payload byte.
    /// Re-encoding a parsed header gives back exactly the bytes read: the
    /// grammar admits one encoding of each header.
    static func read<S: ByteSource>(from reader: inout LineReader<S>) throws -> Header {
        func nextLine(_ what: String) throws -> [UInt8] {
            let result: (line: ArraySlice<UInt8>, terminated: Bool)?
            do { result = try reader.readLine(limit: maximumLineLength) } catch is LineReader<S>.LineTooLong {
                throw fail("a header line is longer than \(maximumLineLength) bytes")
            }
            guard let result else { throw fail("the header ends before \(what)") }
            guard result.terminated else { throw fail("the header ends without a line feed in \(what)") }
            return Array(result.line)
        }

        let first = try nextLine("the version line")
        guard first == versionLine else {
            if first.starts(with: versionPrefix) {
                let version = String(decoding: first.dropFirst(versionPrefix.count).prefix(40), as: UTF8.self)
                throw CofferError(
                    .unsupported,
                    "unsupported age format version \"\(version.filter { $0.isASCII && !$0.isNewline })\"; only v1 is supported"
                )
            }
            throw fail("not an age file: the first line is not \"age-encryption.org/v1\"")
        }

        var stanzas: [Stanza] = []
        while true {
            let line = try nextLine("the MAC line")
            if line.starts(with: Array("---".utf8)) {
                guard !stanzas.isEmpty else { throw fail("the header has no recipient stanza") }
                guard line.count == 4 + 43, line[3] == 0x20,
                    let mac = Base64.decode(line[4...], padded: false), mac.count == 32
                else {
                    throw fail("the MAC line is not \"--- \" and 43 characters of canonical base64")
                }
                return Header(stanzas: stanzas, mac: mac)
            }
            guard line.starts(with: Array("-> ".utf8)) else {
                throw fail("expected a stanza (\"-> \") or the MAC line (\"--- \") at stanza \(stanzas.count + 1)")
            }
            guard stanzas.count < maximumStanzas else {
                throw fail("the header has more than \(maximumStanzas) recipient stanzas")
            }
            let arguments = line.dropFirst(3).split(separator: 0x20, omittingEmptySubsequences: false).map(Array.init)
            guard arguments.allSatisfy(Stanza.isValidArgument) else {
                throw fail("stanza \(stanzas.count + 1) has an empty argument or a character outside printable ASCII")
            }
            var bodyText: [UInt8] = []
            while true {
                let bodyLine = try nextLine("the body of stanza \(stanzas.count + 1)")
                guard bodyLine.count <= Stanza.columns, bodyLine.allSatisfy(Base64.isBase64Character) else {
                    throw fail(
                        "stanza \(stanzas.count + 1) has a body line that is not at most 64 columns of unpadded base64")
                }
                bodyText += bodyLine
                guard bodyText.count <= maximumBodyBytes else {
                    throw fail("stanza \(stanzas.count + 1) has a body over \(maximumBodyBytes) bytes")
                }
                if bodyLine.count < Stanza.columns { break }
            }
            guard let body = Base64.decode(bodyText, padded: false) else {
                throw fail("the body of stanza \(stanzas.count + 1) is not canonical base64")
            }
            let strings = arguments.map { String(decoding: $0, as: UTF8.self) }
            stanzas.append(Stanza(validated: strings[0], arguments: Array(strings.dropFirst()), body: body))
        }
    }
}
