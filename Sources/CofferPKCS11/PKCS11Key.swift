import CCofferPKCS11
import Coffer
import Crypto

/// An AES-256 key inside a PKCS#11 token (an HSM), which seals and opens
/// key slots where it lives: the key is sensitive and not extractable, and
/// its bytes never enter this process (docs/key-slots.md, kind 3).
///
/// ```swift
/// let key = PKCS11Key(
///     module: "/usr/lib/softhsm/libsofthsm2.so", token: "coffer", label: "coffer-kek",
///     pin: SecretBytes(pinFileBytes))
/// try key.prepare(creating: true)             // made in the token when absent
/// let store = KeyRingStore(path: "kek.ckr", secret: .pkcs11(key))
/// ```
///
/// Each use opens a session, logs in, finds the key and closes the session
/// again; a token that went away and came back is found again without a
/// restart. Errors: a wrong PIN is `wrongPassword`; a locked PIN
/// `refused`; no such token, a module failure or a token that went away
/// `keyHolderUnavailable`; no such key `keyNotFound`; a key that could
/// leave the token, or two keys with one label, `refused`.
public struct PKCS11Key: Sendable, CustomStringConvertible {
    /// The module's absolute path.
    public let module: String
    /// The token's label.
    public let token: String
    /// The key's label (CKA_LABEL).
    public let label: String
    let pin: SecretBytes
    /// Set once the token refused this PIN: it is never offered again, so
    /// that retries (the server's check every few seconds, several slots)
    /// cannot use up the token's PIN attempts and lock it.
    let refusedPIN = Locked(false)

    public init(module: String, token: String, label: String, pin: SecretBytes) {
        self.module = module
        self.token = token
        self.label = label
        self.pin = pin
    }

    /// Names the key and its token; never the PIN.
    public var description: String { "the HSM key \(label) in PKCS#11 token \(token)" }

    /// Finds the key; when absent and `creating`, makes it in the token
    /// (AES-256, on the token, private, sensitive, not extractable, for
    /// encryption and decryption only). Returns whether it made it.
    @discardableResult
    public func prepare(creating: Bool) throws -> Bool {
        try withSession(readWrite: creating) { session in
            if try session.findKey(label) != nil { return false }
            guard creating else { throw absent() }
            try session.generateKey(label)
            guard try session.findKey(label) != nil else { throw absent() }
            return true
        }
    }

    /// `plaintext` sealed with AES-256-GCM inside the token, under a
    /// random 12-byte nonce: nonce ‖ ciphertext ‖ 16-byte tag.
    public func seal(_ plaintext: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8] {
        let nonce = Array(AES.GCM.Nonce())
        return try withSession(readWrite: false) { session in
            guard let key = try session.findKey(label) else { throw absent() }
            return nonce + (try session.gcm(encrypt: true, key: key, nonce: nonce, plaintext, associatedData))
        }
    }

    /// What ``seal(_:authenticating:)`` sealed; `wrongPassword` when it
    /// does not open under this key (another key, or changed bytes).
    public func open(_ sealed: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8] {
        guard sealed.count >= 12 + 16 else {
            throw CofferError(.malformed, "a value sealed by \(description) is at least 28 bytes")
        }
        return try withSession(readWrite: false) { session in
            guard let key = try session.findKey(label) else { throw absent() }
            return try session.gcm(
                encrypt: false, key: key, nonce: Array(sealed.prefix(12)), Array(sealed.dropFirst(12)), associatedData)
        }
    }

    func absent() -> CofferError {
        CofferError(
            .keyNotFound,
            "PKCS#11 token \(token) holds no AES key labelled \(label) (coffer-server kek init makes it)")
    }

    func withSession<T>(readWrite: Bool, _ body: (PKCS11Session) throws -> T) throws -> T {
        guard !refusedPIN.withLock({ $0 }) else {
            throw CofferError(
                .wrongPassword, "the PIN for PKCS#11 token \(token) is wrong (refused once; not offered again)")
        }
        let loaded = try PKCS11Module.load(module)
        return try loaded.call { functions in
            let session: PKCS11Session
            do {
                session = try PKCS11Session.open(
                    functions, module: loaded, token: token, pin: pin, readWrite: readWrite)
            } catch let error as CofferError where error.code == .wrongPassword {
                refusedPIN.withLock { $0 = true }
                throw error
            }
            defer { session.close() }
            return try body(session)
        }
    }
}

extension UnlockSecret {
    /// Key slots sealed and opened inside a PKCS#11 token by `key`
    /// (slot kind 3, docs/key-slots.md).
    public static func pkcs11(_ key: PKCS11Key) -> UnlockSecret {
        .keyWrapper(
            named: key.description, seal: { try key.seal($0, authenticating: $1) },
            open: { try key.open($0, authenticating: $1) })
    }
}
