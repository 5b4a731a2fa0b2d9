#if Server
import Coffer
import CofferPKCS11
import Foundation
import Testing

/// CofferPKCS11 in this process: against SoftHSM2 (sealing and opening,
/// the associated data bound, a wrong PIN never offered twice), and
/// against a module that answers wrongly on purpose
/// (Peers/hostile_pkcs11.c), whose every answer must be a clear error.
@Suite struct HSMModuleTests {
    /// The hostile module's ways of answering wrongly, in its numbering,
    /// with the error each must become.
    enum Hostile: Int, CaseIterable, CustomTestStringConvertible {
        case sameLength, versionNine, noList, nullFunctions, manySlots, slotCountGrows, labelGarbage, pinRefused
        case extractableKey, unavailableAttributes, twoKeys, longAnswer, shortAnswer, generalError, badTag
        var testDescription: String { "\(self)" }

        var expected: (CofferError.Code, String) {
            switch self {
            case .sameLength, .slotCountGrows: (.keyHolderUnavailable, "answered AES-GCM with 32 bytes, not 48")
            case .versionNine: (.unsupported, "implements PKCS#11 9.40")
            case .noList: (.unsupported, "C_GetFunctionList failed")
            case .nullFunctions: (.unsupported, "does not provide the session functions")
            case .manySlots: (.keyHolderUnavailable, "lists 1099511627776 slots")
            case .labelGarbage: (.keyHolderUnavailable, "no PKCS#11 token labelled hostile")
            case .pinRefused: (.wrongPassword, "the PIN for PKCS#11 token hostile is wrong")
            case .extractableKey, .unavailableAttributes: (.refused, "not both sensitive and unextractable")
            case .twoKeys: (.refused, "more than one AES key labelled k")
            case .longAnswer: (.keyHolderUnavailable, "answered past its buffer")
            case .shortAnswer: (.keyHolderUnavailable, "answered AES-GCM with 3 bytes, not 48")
            case .generalError: (.keyHolderUnavailable, "failed C_GetSlotList: CKR_GENERAL_ERROR")
            case .badTag: (.wrongPassword, "does not open this value")
            }
        }
    }

    /// The hostile module built in `mode`, with the system's C compiler.
    static func hostileModule(_ mode: Int, in folder: String) throws -> String {
        let output = folder + "/hostile-\(mode).so"
        let run = try Spawned.run(
            "/usr/bin/env",
            [
                "cc", "-shared", "-fPIC", "-O1", "-DHOSTILE_MODE=\(mode)",
                "-I", Issuer.root + "/Sources/CCofferPKCS11/include", "-o", output,
                Issuer.root + "/Tests/CofferKeyServerTests/Peers/hostile_pkcs11.c",
            ], errors: .capture, mergeErrors: true)
        guard run.status == 0 else { throw CofferError(.io, "cc failed: \(run.text)") }
        return output
    }

    static func folder() throws -> String {
        let folder = NSTemporaryDirectory() + "coffer-hsm-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test(arguments: Hostile.allCases) func aModuleThatAnswersWronglyIsAClearError(_ mode: Hostile) throws {
        let module = try Self.hostileModule(mode.rawValue, in: try Self.folder())
        let key = PKCS11Key(module: module, token: "hostile", label: "k", pin: SecretBytes(Array("1234".utf8)))
        let (code, message) = mode.expected
        do {
            if mode == .badTag {
                _ = try key.open([UInt8](repeating: 1, count: 60), authenticating: [])
            } else {
                _ = try key.seal([UInt8](repeating: 1, count: 32), authenticating: [1, 2, 3])
            }
            Issue.record("\(mode): no error")
        } catch let error as CofferError {
            #expect(error.code == code && error.description.contains(message), "\(mode): \(error)")
        }
        // A PIN the token refused is not offered again.
        if mode == .pinRefused {
            #expect(throws: CofferError.self) { try key.prepare(creating: false) }
            let logins = try #require(dlsym(dlopen(module, RTLD_NOW | RTLD_NOLOAD), "hostile_logins"))
            #expect(logins.load(as: UInt.self) == 1)
        }
    }

    @Test func whatIsNotAModuleIsSaidSo() throws {
        let folder = try Self.folder()
        let key = { (path: String) in PKCS11Key(module: path, token: "t", label: "k", pin: SecretBytes([0x31])) }
        let cases: [(String, CofferError.Code, String)] = [
            ("relative.so", .invalidArgument, "absolute path"),
            (folder + "/missing.so", .io, "cannot load the PKCS#11 module"),
        ]
        // A shared library that is not a PKCS#11 module: zlib's.
        let zlib = try #require(
            ["/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/aarch64-linux-gnu/libz.so.1"].first {
                FileManager.default.fileExists(atPath: $0)
            })
        let all = cases + [(zlib, CofferError.Code.unsupported, "has no C_GetFunctionList")]
        for (path, code, message) in all {
            #expect {
                try key(path).prepare(creating: false)
            } throws: { error in
                (error as? CofferError).map { $0.code == code && $0.description.contains(message) } ?? false
            }
        }
    }

    @Test func slotsSealedInSoftHSMOpenOnlyWithTheirAssociatedData() throws {
        let hsm = try SoftHSM(in: try Self.folder())
        setenv("SOFTHSM2_CONF", hsm.folder + "/softhsm2.conf", 1)
        let pin = SecretBytes(Array("1234".utf8))
        let key = PKCS11Key(module: SoftHSM.module, token: SoftHSM.token, label: "unit", pin: pin)
        #expect(throws: CofferError.self) { try key.prepare(creating: false) }
        #expect(try key.prepare(creating: true))
        #expect(try !key.prepare(creating: true))
        let secret = [UInt8](repeating: 9, count: 32)
        let sealed = try key.seal(secret, authenticating: [1, 2])
        #expect(sealed.count == 60 && Array(sealed.dropFirst(12).prefix(32)) != secret)
        #expect(try key.open(sealed, authenticating: [1, 2]) == secret)
        #expect(try key.seal(secret, authenticating: [1, 2]) != sealed, "a nonce of its own each time")
        #expect {
            try key.open(sealed, authenticating: [1, 3])
        } throws: { ($0 as? CofferError)?.code == .wrongPassword }

        // As a key ring's root: the ring opens with the token, and only with it.
        let path = hsm.folder + "/ring.ckr"
        let ring = KeyRingStore(path: path, secret: .pkcs11(key), rollbackGuard: nil)
        let made = try ring.create()
        #expect(try ring.read().keyRing.primaryID == made.keyRing.primaryID)
        let password = KeyRingStore(path: path, secret: .password(Array("guess".utf8)), rollbackGuard: nil)
        #expect {
            try password.read()
        } throws: { ($0 as? CofferError)?.code == .invalidArgument }
        let wrong = PKCS11Key(module: SoftHSM.module, token: SoftHSM.token, label: "unit", pin: SecretBytes([0x39]))
        #expect {
            try KeyRingStore(path: path, secret: .pkcs11(wrong), rollbackGuard: nil).read()
        } throws: { ($0 as? CofferError)?.code == .wrongPassword }
    }
}
#endif
