import CCofferPKCS11
import Coffer

/// One logged-in session with a token, used under the module's lock
/// (``PKCS11Module/call(_:)``) and closed before the lock is released.
struct PKCS11Session {
    let functions: coffer_ck_function_list
    let module: PKCS11Module
    let token: String
    let handle: coffer_ck_ulong

    // Constants from the PKCS#11 specification.
    static let serialSession: coffer_ck_ulong = 0x4
    static let readWriteSession: coffer_ck_ulong = 0x2
    static let user: coffer_ck_ulong = 1
    static let secretKeyClass: coffer_ck_ulong = 4
    static let aesKeyType: coffer_ck_ulong = 0x1F
    static let aesKeyGeneration: coffer_ck_ulong = 0x1080
    static let aesGCM: coffer_ck_ulong = 0x1087
    enum Attribute {
        static let keyClass: coffer_ck_ulong = 0x0
        static let token: coffer_ck_ulong = 0x1
        static let `private`: coffer_ck_ulong = 0x2
        static let label: coffer_ck_ulong = 0x3
        static let keyType: coffer_ck_ulong = 0x100
        static let sensitive: coffer_ck_ulong = 0x103
        static let encrypt: coffer_ck_ulong = 0x104
        static let decrypt: coffer_ck_ulong = 0x105
        static let valueLength: coffer_ck_ulong = 0x161
        static let extractable: coffer_ck_ulong = 0x162
    }

    /// Finds the token labelled `token` among the slots with a token,
    /// opens a session on it and logs the user in with `pin`.
    static func open(
        _ functions: coffer_ck_function_list, module: PKCS11Module, token: String, pin: SecretBytes, readWrite: Bool
    ) throws -> PKCS11Session {
        guard let getSlots = functions.get_slot_list, let getToken = functions.get_token_info,
            let openSession = functions.open_session, let login = functions.login
        else { throw module.missing("the session functions") }
        var count: coffer_ck_ulong = 0
        try check(getSlots(1, nil, &count), "C_GetSlotList", module)
        guard count <= 4096 else {
            throw CofferError(.keyHolderUnavailable, "the PKCS#11 module \(module.path) lists \(count) slots")
        }
        var slots = [coffer_ck_ulong](repeating: 0, count: Int(count))
        try check(getSlots(1, &slots, &count), "C_GetSlotList", module)
        let wanted = Array(token.utf8)
        var found: coffer_ck_ulong?
        for slot in slots.prefix(Int(min(count, coffer_ck_ulong(slots.count)))) {
            var info = coffer_ck_token_info()
            guard getToken(slot, &info) == 0 else { continue }
            // The label is 32 bytes, padded with spaces.
            let label = withUnsafeBytes(of: info.label) { Array($0) }
            var trimmed = label[...]
            while trimmed.last == 0x20 || trimmed.last == 0 { trimmed = trimmed.dropLast() }
            if Array(trimmed) == wanted {
                found = slot
                break
            }
        }
        guard let slot = found else {
            throw CofferError(
                .keyHolderUnavailable,
                "no PKCS#11 token labelled \(token) is present in \(module.path)'s \(count) slot\(count == 1 ? "" : "s")"
            )
        }
        var handle: coffer_ck_ulong = 0
        let flags = serialSession | (readWrite ? readWriteSession : 0)
        try check(openSession(slot, flags, nil, nil, &handle), "C_OpenSession", module)
        let session = PKCS11Session(functions: functions, module: module, token: token, handle: handle)
        let result = pin.withUnsafeBytes { bytes in
            login(handle, user, bytes.bindMemory(to: UInt8.self).baseAddress, coffer_ck_ulong(bytes.count))
        }
        switch result {
        case 0, PKCS11Return.userAlreadyLoggedIn: return session
        case PKCS11Return.pinIncorrect:
            session.close()
            throw CofferError(.wrongPassword, "the PIN for PKCS#11 token \(token) is wrong")
        case PKCS11Return.pinLocked, PKCS11Return.pinExpired:
            session.close()
            throw CofferError(
                .refused,
                "the PIN for PKCS#11 token \(token) is \(result == PKCS11Return.pinLocked ? "locked" : "expired")")
        default:
            session.close()
            try check(result, "C_Login", module)
            return session
        }
    }

    func close() { _ = functions.close_session?(handle) }

    /// A module's answer other than CKR_OK as an error: unsupported
    /// mechanisms and functions as `unsupported`, anything else as
    /// `keyHolderUnavailable` (the module is finalized and tried afresh).
    static func check(_ result: coffer_ck_rv, _ function: String, _ module: PKCS11Module) throws {
        guard result != 0 else { return }
        let name = PKCS11Return.name(result)
        switch result {
        case 0x54, 0x70, 0x71:
            throw CofferError(.unsupported, "the PKCS#11 module \(module.path) refused \(function): \(name)")
        default:
            throw CofferError(.keyHolderUnavailable, "the PKCS#11 module \(module.path) failed \(function): \(name)")
        }
    }

    /// The AES secret key labelled `label`, nil when there is none. A key
    /// that is not AES-256, sensitive and unextractable is refused, and
    /// so are two keys with one label.
    func findKey(_ label: String) throws -> coffer_ck_ulong? {
        guard let begin = functions.find_objects_init, let next = functions.find_objects,
            let end = functions.find_objects_final
        else { throw module.missing("C_FindObjects") }
        let template = PKCS11Template([
            (Attribute.keyClass, .number(Self.secretKeyClass)), (Attribute.keyType, .number(Self.aesKeyType)),
            (Attribute.label, .bytes(Array(label.utf8))),
        ])
        try Self.check(template.withAttributes { begin(handle, $0, $1) }, "C_FindObjectsInit", module)
        var objects = [coffer_ck_ulong](repeating: 0, count: 2)
        var count: coffer_ck_ulong = 0
        let result = next(handle, &objects, 2, &count)
        _ = end(handle)
        try Self.check(result, "C_FindObjects", module)
        guard count > 0 else { return nil }
        guard count == 1 else {
            throw CofferError(
                .refused, "PKCS#11 token \(token) holds more than one AES key labelled \(label): label one afresh")
        }
        try checkKept(objects[0], label)
        return objects[0]
    }

    /// Refuses a key whose bytes could leave the token, or not AES-256.
    func checkKept(_ key: coffer_ck_ulong, _ label: String) throws {
        guard let get = functions.get_attribute_value else { throw module.missing("C_GetAttributeValue") }
        let template = PKCS11Template([
            (Attribute.sensitive, .bool(false)), (Attribute.extractable, .bool(true)),
            (Attribute.valueLength, .number(0)),
        ])
        try Self.check(template.withAttributes { get(handle, key, $0, $1) }, "C_GetAttributeValue", module)
        let values = template.values()
        guard values[0] == [1], values[1] == [0] else {
            throw CofferError(
                .refused,
                "the AES key \(label) in PKCS#11 token \(token) is not both sensitive and unextractable: Coffer uses only keys that never leave the token"
            )
        }
        let length =
            values[2].count == MemoryLayout<coffer_ck_ulong>.size
            ? values[2].withUnsafeBytes { $0.loadUnaligned(as: coffer_ck_ulong.self) } : 0
        guard length == 32 else {
            throw CofferError(.refused, "the AES key \(label) in PKCS#11 token \(token) is not 256 bits")
        }
    }

    /// Whether the token still answers for `key` (its length read back).
    func stillHolds(_ key: coffer_ck_ulong) -> Bool {
        guard let get = functions.get_attribute_value else { return false }
        let template = PKCS11Template([(Attribute.valueLength, .number(0))])
        return template.withAttributes { get(handle, key, $0, $1) } == 0
    }

    /// Makes an AES-256 key on the token, never to leave it.
    func generateKey(_ label: String) throws {
        guard let generate = functions.generate_key else { throw module.missing("C_GenerateKey") }
        let template = PKCS11Template([
            (Attribute.keyClass, .number(Self.secretKeyClass)), (Attribute.keyType, .number(Self.aesKeyType)),
            (Attribute.valueLength, .number(32)), (Attribute.token, .bool(true)), (Attribute.private, .bool(true)),
            (Attribute.sensitive, .bool(true)), (Attribute.extractable, .bool(false)), (Attribute.encrypt, .bool(true)),
            (Attribute.decrypt, .bool(true)), (Attribute.label, .bytes(Array(label.utf8))),
        ])
        var mechanism = coffer_ck_mechanism(mechanism: Self.aesKeyGeneration, parameter: nil, parameter_len: 0)
        var key: coffer_ck_ulong = 0
        try Self.check(template.withAttributes { generate(handle, &mechanism, $0, $1, &key) }, "C_GenerateKey", module)
    }

    /// AES-GCM inside the token with a 96-bit nonce and a 128-bit tag:
    /// ciphertext ‖ tag when encrypting, the plaintext when decrypting
    /// (`wrongPassword` when the tag does not verify).
    func gcm(encrypt: Bool, key: coffer_ck_ulong, nonce: [UInt8], _ input: [UInt8], _ associatedData: [UInt8])
        throws -> [UInt8]
    {
        guard let initialize = encrypt ? functions.encrypt_init : functions.decrypt_init,
            let run = encrypt ? functions.encrypt : functions.decrypt
        else { throw module.missing(encrypt ? "C_Encrypt" : "C_Decrypt") }
        var nonce = nonce
        var associatedData = associatedData
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var outputCount = coffer_ck_ulong(output.count)
        let (started, result) = nonce.withUnsafeMutableBufferPointer { nonceBytes in
            associatedData.withUnsafeMutableBufferPointer { aadBytes in
                var parameters = coffer_ck_gcm_params(
                    iv: nonceBytes.baseAddress, iv_len: coffer_ck_ulong(nonceBytes.count),
                    iv_bits: coffer_ck_ulong(nonceBytes.count * 8), aad: aadBytes.baseAddress,
                    aad_len: coffer_ck_ulong(aadBytes.count), tag_bits: 128)
                return withUnsafeMutablePointer(to: &parameters) { pointer in
                    var mechanism = coffer_ck_mechanism(
                        mechanism: Self.aesGCM, parameter: UnsafeMutableRawPointer(pointer),
                        parameter_len: coffer_ck_ulong(MemoryLayout<coffer_ck_gcm_params>.size))
                    let started = initialize(handle, &mechanism, key)
                    guard started == 0 else { return (started, started) }
                    return (started, run(handle, input, coffer_ck_ulong(input.count), &output, &outputCount))
                }
            }
        }
        try Self.check(started, encrypt ? "C_EncryptInit" : "C_DecryptInit", module)
        // A tag that does not verify is CKR_ENCRYPTED_DATA_INVALID in the
        // specification; SoftHSM2 answers CKR_GENERAL_ERROR (or
        // CKR_FUNCTION_FAILED), which is a tag failure only while the
        // token still answers for the key.
        let dataRefused = [PKCS11Return.encryptedDataInvalid, PKCS11Return.encryptedDataLengthRange].contains(result)
        if !encrypt && (dataRefused || ([0x5, 0x6].contains(result) && stillHolds(key))) {
            throw CofferError(.wrongPassword, "the HSM key does not open this value (another key, or changed bytes)")
        }
        try Self.check(result, encrypt ? "C_Encrypt" : "C_Decrypt", module)
        guard outputCount <= coffer_ck_ulong(output.count) else {
            throw CofferError(.keyHolderUnavailable, "the PKCS#11 module \(module.path) answered past its buffer")
        }
        let expected = encrypt ? input.count + 16 : input.count - 16
        guard Int(outputCount) == expected else {
            throw CofferError(
                .keyHolderUnavailable,
                "the PKCS#11 module \(module.path) answered AES-GCM with \(outputCount) bytes, not \(expected)")
        }
        return Array(output.prefix(expected))
    }
}

/// A CK_ATTRIBUTE array whose values live as long as the template.
final class PKCS11Template {
    enum Value {
        case bool(Bool)
        case number(coffer_ck_ulong)
        case bytes([UInt8])
    }
    private var attributes: [coffer_ck_attribute]
    private let buffers: [UnsafeMutableRawBufferPointer]

    init(_ items: [(coffer_ck_ulong, Value)]) {
        var attributes: [coffer_ck_attribute] = []
        var buffers: [UnsafeMutableRawBufferPointer] = []
        for (type, value) in items {
            let bytes: [UInt8] =
                switch value {
                case .bool(let flag): [flag ? 1 : 0]
                case .number(let number): withUnsafeBytes(of: number) { Array($0) }
                case .bytes(let bytes): bytes
                }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
            buffer.copyBytes(from: bytes)
            buffers.append(buffer)
            attributes.append(
                coffer_ck_attribute(type: type, value: buffer.baseAddress, value_len: coffer_ck_ulong(bytes.count)))
        }
        self.attributes = attributes
        self.buffers = buffers
    }

    deinit { for buffer in buffers { buffer.deallocate() } }

    func withAttributes<T>(_ body: (UnsafeMutablePointer<coffer_ck_attribute>?, coffer_ck_ulong) -> T) -> T {
        attributes.withUnsafeMutableBufferPointer { body($0.baseAddress, coffer_ck_ulong($0.count)) }
    }

    /// Each attribute's value as the module left it (within its buffer).
    func values() -> [[UInt8]] {
        zip(attributes, buffers).map { attribute, buffer in
            Array(buffer.prefix(min(Int(clamping: attribute.value_len), buffer.count)))
        }
    }
}
