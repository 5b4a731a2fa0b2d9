import Coffer
import Foundation

/// One step that makes equal-meaning values index alike before a blind
/// index is computed (docs/store.md, "Transforms"). Steps run in the
/// order given; a step that finds nothing to keep (no `@` for
/// `emailDomain`, no digit for `digitsOnly`) leaves the value unindexed.
///
/// In a schema file each is a string: `nfc`, `nfkc`, `lowercase`, `trim`,
/// `digits`, `first:N`, `last:N`, `email-domain`. Library users can also
/// give a closure (`custom`).
public struct IndexTransform: Sendable, CustomStringConvertible {
    enum Step: Sendable {
        case nfc, nfkc, lowercase, trim, digitsOnly, emailDomain
        case first(Int)
        case last(Int)
        case custom(name: String, apply: @Sendable (String) -> String?)
    }
    let step: Step

    /// Unicode Normalization Form C.
    public static let nfc = IndexTransform(step: .nfc)
    /// Unicode Normalization Form KC (compatibility: full-width digits become ASCII, ligatures split).
    public static let nfkc = IndexTransform(step: .nfkc)
    /// Unicode full lowercase mapping.
    public static let lowercase = IndexTransform(step: .lowercase)
    /// Drops leading and trailing Unicode White_Space.
    public static let trim = IndexTransform(step: .trim)
    /// Keeps the ASCII digits 0–9 only (phone numbers, card numbers).
    public static let digitsOnly = IndexTransform(step: .digitsOnly)
    /// Keeps what follows the last `@`.
    public static let emailDomain = IndexTransform(step: .emailDomain)
    /// Keeps the first `count` Unicode scalars.
    public static func first(_ count: Int) -> IndexTransform { IndexTransform(step: .first(count)) }
    /// Keeps the last `count` Unicode scalars.
    public static func last(_ count: Int) -> IndexTransform { IndexTransform(step: .last(count)) }
    /// Any function of the text; nil leaves the value unindexed. `name`
    /// says what it is in descriptions and errors. A store's index must
    /// use the same function for every write and query.
    public static func custom(_ name: String, _ apply: @escaping @Sendable (String) -> String?) -> IndexTransform {
        IndexTransform(step: .custom(name: name, apply: apply))
    }

    /// The schema file's spelling.
    public var description: String {
        switch step {
        case .nfc: "nfc"
        case .nfkc: "nfkc"
        case .lowercase: "lowercase"
        case .trim: "trim"
        case .digitsOnly: "digits"
        case .emailDomain: "email-domain"
        case .first(let count): "first:\(count)"
        case .last(let count): "last:\(count)"
        case .custom(let name, _): "custom:\(name)"
        }
    }

    /// Parses the schema file's spelling.
    public init(parsing text: String) throws {
        switch text {
        case "nfc": step = .nfc
        case "nfkc": step = .nfkc
        case "lowercase": step = .lowercase
        case "trim": step = .trim
        case "digits": step = .digitsOnly
        case "email-domain": step = .emailDomain
        default:
            let parts = text.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let count = Int(parts[1]), (1...1024).contains(count) else {
                throw CofferError(
                    .invalidArgument,
                    "unknown index transform \"\(text)\"; use nfc, nfkc, lowercase, trim, digits, first:N, last:N or email-domain (N 1 to 1024)"
                )
            }
            switch parts[0] {
            case "first": step = .first(count)
            case "last": step = .last(count)
            default:
                throw CofferError(.invalidArgument, "unknown index transform \"\(text)\"")
            }
        }
    }

    init(step: Step) { self.step = step }

    /// The transformed text, or nil when nothing is left to index.
    /// A printable ASCII byte other than space: never whitespace, never
    /// part of a longer scalar.
    static func isPlainASCII(_ byte: UInt8) -> Bool { (0x21...0x7E).contains(byte) }

    public func apply(_ text: String) -> String? {
        switch step {
        case .nfc: return text.precomposedStringWithCanonicalMapping
        case .nfkc: return text.precomposedStringWithCompatibilityMapping
        case .lowercase:
            // Text with no capital ASCII letter and nothing past ASCII is its own lower case.
            if text.utf8.allSatisfy({ $0 < 0x80 && !(0x41...0x5A).contains($0) }) { return text }
            return text.lowercased()
        case .trim:
            if let first = text.utf8.first, let last = text.utf8.last, Self.isPlainASCII(first),
                Self.isPlainASCII(last)
            {
                return text
            }
            let scalars = text.unicodeScalars
            guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
            return String(scalars[start...end])
        case .digitsOnly:
            let digits = text.unicodeScalars.filter { ("0"..."9").contains($0) }
            return digits.isEmpty ? nil : String(String.UnicodeScalarView(digits))
        case .emailDomain:
            guard let at = text.lastIndex(of: "@") else { return nil }
            return String(text[text.index(after: at)...])
        case .first(let count): return String(String.UnicodeScalarView(text.unicodeScalars.prefix(count)))
        case .last(let count): return String(String.UnicodeScalarView(text.unicodeScalars.suffix(count)))
        case .custom(_, let apply): return apply(text)
        }
    }
}

/// How a token index splits a value (docs/store.md, "Token indexes"). In a
/// schema file: `"tokens": "words"` or `"tokens": "split:SEPARATOR"`.
public struct IndexTokens: Sendable, Equatable, CustomStringConvertible {
    enum Kind: Equatable {
        case words
        case separator(String)
    }
    let kind: Kind

    /// Runs of letters and digits (Unicode), everything else separating.
    public static let words = IndexTokens(kind: .words)
    /// The parts between occurrences of `separator` (tags as "a,b,c").
    public static func split(_ separator: String) -> IndexTokens { IndexTokens(kind: .separator(separator)) }

    public var description: String {
        switch kind {
        case .words: "words"
        case .separator(let separator): "split:" + separator
        }
    }

    public init(parsing text: String) throws {
        if text == "words" {
            kind = .words
        } else if text.hasPrefix("split:"), (1...16).contains(text.dropFirst(6).count) {
            kind = .separator(String(text.dropFirst(6)))
        } else {
            throw CofferError(
                .invalidArgument, "unknown tokens \"\(text)\"; use words or split:SEPARATOR (1 to 16 characters)")
        }
    }

    init(kind: Kind) { self.kind = kind }

    /// The distinct tokens of `text` after `transforms`, sorted; tokens the
    /// transforms leave empty or drop are not kept.
    public func tokens(of text: String, transforms: [IndexTransform]) -> [String] {
        let parts: [String]
        switch kind {
        case .words:
            parts = text.split { !($0.isLetter || $0.isNumber) }.map(String.init)
        case .separator(let separator):
            parts = text.components(separatedBy: separator)
        }
        var kept = Set<String>()
        for part in parts {
            var token = part
            var dropped = false
            for transform in transforms {
                guard let next = transform.apply(token) else {
                    dropped = true
                    break
                }
                token = next
            }
            if !dropped && !token.isEmpty { kept.insert(token) }
        }
        return kept.sorted()
    }
}
