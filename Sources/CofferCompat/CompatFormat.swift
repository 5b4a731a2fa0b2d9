import Coffer
import Foundation

/// A format iOS apps stored data in, as a migration reads it: its name,
/// what it needs to open a value, whether what it opens was authenticated,
/// and how to read one value. ``all`` lists the formats CofferCompat reads;
/// the list is open — a format of an app's own is a ``CompatFormat`` made
/// with ``init(name:summary:needs:keySizes:authenticated:read:)`` — and `coffer
/// convert` is one loop over it: find the format, gather what it needs,
/// read, encrypt to age.
///
/// ```swift
/// let format = try CompatFormat.named("rncryptor")
/// var given = CompatFormat.Credentials()
/// given.password = Array("the app's password".utf8)
/// let plaintext = try format.read(stored, with: given)
/// ```
public struct CompatFormat: Sendable, CustomStringConvertible {
    /// What a format takes to open a value.
    public enum Need: Sendable, Hashable {
        /// A password or passphrase (bytes; ``Credentials/password``).
        case password
        /// A raw key (``Credentials/key``), of ``CompatFormat/keySizes`` bytes.
        case key
        /// Either a password or a raw key.
        case passwordOrKey
        /// A private key (``Credentials/privateKey``) and a SecKey algorithm's name (``Credentials/algorithm``).
        case privateKeyAndAlgorithm
        /// AeroGear's salt and IV or nonce (``Credentials/aeroGear``) for
        /// this generation, and its user's password.
        case aeroGearParameters(AeroGear.Generation)
    }

    /// What the caller gives; a format reads the members its needs name.
    public struct Credentials: Sendable {
        public var password: [UInt8]?
        public var key: [UInt8]?
        public var privateKey: AppleKey?
        public var algorithm: String?
        public var aeroGear: AeroGear.Parameters?

        public init() {}

        func required<T>(_ value: T?, _ what: String, for format: String) throws -> T {
            guard let value else { throw CofferError(.invalidArgument, "\(format) needs \(what)") }
            return value
        }
    }

    /// The name a command line gives (`rncryptor`, `legacy-cbc`, …).
    public let name: String
    /// One line for people.
    public let summary: String
    /// What it takes.
    public let needs: Need
    /// The sizes a raw key may have (empty when it takes none).
    public let keySizes: [Int]
    /// False when a value it opens was not authenticated (only its padding
    /// was checked): a caller says so to its user.
    public let authenticated: Bool
    private let reader: @Sendable (Data, Credentials) throws -> Data

    public init(
        name: String, summary: String, needs: Need, keySizes: [Int] = [], authenticated: Bool,
        read: @escaping @Sendable (Data, Credentials) throws -> Data
    ) {
        self.name = name
        self.summary = summary
        self.needs = needs
        self.keySizes = keySizes
        self.authenticated = authenticated
        reader = read
    }

    /// One stored value, opened; nothing is returned that did not open
    /// (or, when not ``authenticated``, whose padding was wrong).
    public func read(_ stored: some Collection<UInt8>, with credentials: Credentials) throws -> Data {
        try reader(Data(stored), credentials)
    }

    public var description: String { name }

    /// The format named `name` in ``all``, or `invalidArgument` listing them.
    public static func named(_ name: String, in formats: [CompatFormat] = all) throws -> CompatFormat {
        guard let format = formats.first(where: { $0.name == name }) else {
            throw CofferError(
                .invalidArgument,
                "no format is named \(name); the formats are \(formats.map(\.name).joined(separator: ", "))")
        }
        return format
    }

    /// The formats CofferCompat reads (docs/compat.md).
    public static let all: [CompatFormat] = [
        CompatFormat(
            name: "apple-ecies", summary: "what SecKeyCreateEncryptedData wrote (ECIES or RSA-OAEP + AES-GCM)",
            needs: .privateKeyAndAlgorithm, authenticated: true
        ) { stored, given in
            try AppleSecKey.decrypt(
                stored, with: try given.required(given.privateKey, "a private key", for: "apple-ecies"),
                algorithm: try AppleAlgorithm(try given.required(given.algorithm, "an algorithm", for: "apple-ecies")))
        },
        CompatFormat(
            name: "rncryptor", summary: "an RNCryptor v3 message", needs: .passwordOrKey, keySizes: [64],
            authenticated: true
        ) { stored, given in
            if let key = given.key { return try RNCryptor.decrypt(stored, credentials: try .keyFile(key)) }
            return try RNCryptor.decrypt(
                stored, credentials: .password(try given.required(given.password, "a password", for: "rncryptor")))
        },
        legacy(.cbc), legacy(.ecb), cryptoKit(.aesgcm), cryptoKit(.chachapoly), aeroGear(.cbc), aeroGear(.secretBox),
    ]

    static func legacy(_ mode: LegacyRecipe.Mode) -> CompatFormat {
        let name = mode == .cbc ? "legacy-cbc" : "legacy-ecb"
        return CompatFormat(
            name: name, summary: "the CommonCrypto recipe's stored dictionary (\(mode == .cbc ? "CBC" : "ECB"))",
            needs: .password, authenticated: false
        ) { stored, given in
            try LegacyRecipe.decrypt(
                try LegacyRecipe.envelope(stored),
                passphrase: try given.required(given.password, "a passphrase", for: name),
                mode: mode
            ).bytes
        }
    }

    static func cryptoKit(_ cipher: CryptoKitBox.Cipher) -> CompatFormat {
        let name = cipher == .aesgcm ? "cryptokit-aesgcm" : "cryptokit-chachapoly"
        return CompatFormat(
            name: name, summary: "a CryptoKit sealed box (\(cipher == .aesgcm ? "AES.GCM" : "ChaChaPoly"), combined)",
            needs: .key, keySizes: [32], authenticated: true
        ) { stored, given in
            try CryptoKitBox.open(
                stored, key: try given.required(given.key, "a 32-byte key", for: name), cipher: cipher)
        }
    }

    static func aeroGear(_ generation: AeroGear.Generation) -> CompatFormat {
        let name = generation == .cbc ? "aerogear-cbc" : "aerogear-secretbox"
        return CompatFormat(
            name: name, summary: "one value an AeroGear app sealed (\(generation))",
            needs: .aeroGearParameters(generation),
            authenticated: generation != .cbc
        ) { stored, given in
            let parameters = try given.required(given.aeroGear, "the salt and IV or nonce", for: name)
            let password = try given.required(given.password, "the app user's password", for: name)
            guard let text = String(validating: password, as: UTF8.self) else {
                throw CofferError(.invalidArgument, "the AeroGear password is not UTF-8 text")
            }
            let key = try AeroGear.key(password: text, salt: parameters.salt, generation: generation)
            return try AeroGear.open(stored, ivOrNonce: parameters.ivOrNonce, key: key, generation: generation)
        }
    }
}
