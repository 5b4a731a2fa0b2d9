import Foundation

/// RFC 7468 textual encoding: one `-----BEGIN label-----` block, base64
/// lines, `-----END label-----`. Text before and after the block (as
/// OpenSSL writes for "explanatory text") is ignored; a second block is not.
enum PEM {
    struct Block {
        let label: String
        let bytes: [UInt8]
    }

    static func looksLikePEM(_ bytes: some Collection<UInt8>) -> Bool {
        let prefix = Array(bytes.prefix(4096))
        return String(decoding: prefix, as: UTF8.self).contains("-----BEGIN ")
    }

    static func decode(_ text: String) throws -> Block {
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard let begin = lines.firstIndex(where: { $0.hasPrefix("-----BEGIN ") && $0.hasSuffix("-----") }) else {
            throw CofferError(.malformed, "no PEM \"-----BEGIN …-----\" line")
        }
        let label = String(lines[begin].dropFirst(11).dropLast(5))
        guard let end = lines[(begin + 1)...].firstIndex(of: "-----END \(label)-----") else {
            throw CofferError(.malformed, "the PEM block \"\(label)\" has no matching END line")
        }
        guard !lines[(end + 1)...].contains(where: { $0.hasPrefix("-----BEGIN ") }) else {
            throw CofferError(.malformed, "the file holds more than one PEM block")
        }
        let body = lines[(begin + 1)..<end]
        guard !body.contains(where: { $0.contains(":") }) else {
            throw CofferError(
                .unsupported,
                "the PEM block \"\(label)\" has headers (Proc-Type/DEK-Info): it is encrypted the legacy OpenSSL way; decrypt it first (openssl pkey -in KEY -out PLAIN)"
            )
        }
        guard let bytes = Data(base64Encoded: body.joined()), !bytes.isEmpty else {
            throw CofferError(.malformed, "the PEM block \"\(label)\" is not valid base64")
        }
        return Block(label: label, bytes: Array(bytes))
    }

    static func encode(label: String, _ bytes: some Collection<UInt8>) -> String {
        let base64 = Data(bytes).base64EncodedString()
        var lines = ["-----BEGIN \(label)-----"]
        var index = base64.startIndex
        while index < base64.endIndex {
            let next = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[index..<next]))
            index = next
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }
}
