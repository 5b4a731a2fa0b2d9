import CCofferPKCS11
import Coffer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PKCS#11 module (a `.so` an HSM's vendor ships, SoftHSM2's
/// `libsofthsm2.so`), loaded once per path for the process's life.
///
/// Every call into the module happens here, one at a time, under one lock:
/// the module is initialized on first use and finalized after a failure
/// that says the token may be gone, so that the next use finds a token
/// that came back (a module lists its tokens when initialized).
final class PKCS11Module: Sendable {
    let path: String
    private let functions: Locked<Functions>

    /// The module's function list, and whether C_Initialize has run.
    private struct Functions: @unchecked Sendable {  // used only under the lock
        let list: UnsafeMutablePointer<coffer_ck_function_list>
        var initialized = false
    }

    private static let loaded = Locked<[String: PKCS11Module]>([:])

    /// The module at `path`, loaded with `dlopen` the first time.
    static func load(_ path: String) throws -> PKCS11Module {
        try loaded.withLock { modules in
            if let module = modules[path] { return module }
            let module = try PKCS11Module(path: path)
            modules[path] = module
            return module
        }
    }

    private init(path: String) throws {
        guard path.hasPrefix("/") else {
            throw CofferError(.invalidArgument, "a PKCS#11 module is named by its absolute path, not \(path)")
        }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            throw CofferError(.io, "cannot load the PKCS#11 module \(path): \(reason)")
        }
        guard let symbol = dlsym(handle, "C_GetFunctionList") else {
            dlclose(handle)
            throw CofferError(.unsupported, "\(path) is not a PKCS#11 module: it has no C_GetFunctionList")
        }
        var list: UnsafeMutablePointer<coffer_ck_function_list>?
        let result = coffer_pkcs11_function_list(symbol, &list)
        guard result == 0, let list else {
            throw CofferError(.unsupported, "\(path)'s C_GetFunctionList failed: \(PKCS11Return.name(result))")
        }
        let version = list.pointee.version
        guard version.major == 2 || version.major == 3 else {
            throw CofferError(
                .unsupported, "\(path) implements PKCS#11 \(version.major).\(version.minor); Coffer needs 2.x or 3.x")
        }
        self.path = path
        functions = Locked(Functions(list: list))
    }

    /// Runs `body` with the module's functions, initializing the module
    /// first if needed; after a failure that may mean the token went away,
    /// finalizes it so the next call starts afresh.
    func call<T>(_ body: (coffer_ck_function_list) throws -> T) throws -> T {
        try functions.withLock { state in
            let list = state.list.pointee
            if !state.initialized {
                guard let initialize = list.initialize else { throw missing("C_Initialize") }
                var arguments = coffer_ck_initialize_args()
                arguments.flags = PKCS11Return.osLockingOK
                let result = withUnsafeMutablePointer(to: &arguments) { initialize(UnsafeMutableRawPointer($0)) }
                guard result == 0 || result == PKCS11Return.alreadyInitialized else {
                    throw CofferError(
                        .keyHolderUnavailable,
                        "the PKCS#11 module \(path) did not initialize: \(PKCS11Return.name(result))")
                }
                state.initialized = true
            }
            do {
                return try body(list)
            } catch let error as CofferError where error.code == .keyHolderUnavailable {
                _ = list.finalize?(nil)
                state.initialized = false
                throw error
            }
        }
    }

    func missing(_ function: String) -> CofferError {
        CofferError(.unsupported, "the PKCS#11 module \(path) does not provide \(function)")
    }
}

/// The CK_RV values and flags Coffer names, from the PKCS#11 specification.
enum PKCS11Return {
    static let osLockingOK: coffer_ck_ulong = 0x2
    static let alreadyInitialized: coffer_ck_ulong = 0x191
    static let userAlreadyLoggedIn: coffer_ck_ulong = 0x100
    static let pinIncorrect: coffer_ck_ulong = 0xA0
    static let pinLocked: coffer_ck_ulong = 0xA4
    static let pinExpired: coffer_ck_ulong = 0xA3
    static let encryptedDataInvalid: coffer_ck_ulong = 0x40
    static let encryptedDataLengthRange: coffer_ck_ulong = 0x41

    private static let names: [coffer_ck_ulong: String] = [
        0x0: "CKR_OK", 0x1: "CKR_CANCEL", 0x2: "CKR_HOST_MEMORY", 0x3: "CKR_SLOT_ID_INVALID",
        0x5: "CKR_GENERAL_ERROR", 0x6: "CKR_FUNCTION_FAILED", 0x7: "CKR_ARGUMENTS_BAD",
        0x30: "CKR_DEVICE_ERROR", 0x31: "CKR_DEVICE_MEMORY", 0x32: "CKR_DEVICE_REMOVED",
        0x40: "CKR_ENCRYPTED_DATA_INVALID", 0x41: "CKR_ENCRYPTED_DATA_LEN_RANGE", 0x54: "CKR_FUNCTION_NOT_SUPPORTED",
        0x60: "CKR_KEY_HANDLE_INVALID", 0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED", 0x70: "CKR_MECHANISM_INVALID",
        0x71: "CKR_MECHANISM_PARAM_INVALID", 0x82: "CKR_OBJECT_HANDLE_INVALID", 0xA0: "CKR_PIN_INCORRECT",
        0xA3: "CKR_PIN_EXPIRED", 0xA4: "CKR_PIN_LOCKED", 0xB3: "CKR_SESSION_HANDLE_INVALID",
        0xB5: "CKR_SESSION_READ_ONLY", 0xD0: "CKR_TEMPLATE_INCOMPLETE", 0xD1: "CKR_TEMPLATE_INCONSISTENT",
        0xE0: "CKR_TOKEN_NOT_PRESENT", 0xE1: "CKR_TOKEN_NOT_RECOGNIZED", 0x101: "CKR_USER_NOT_LOGGED_IN",
        0x150: "CKR_BUFFER_TOO_SMALL", 0x190: "CKR_CRYPTOKI_NOT_INITIALIZED",
    ]

    static func name(_ value: coffer_ck_ulong) -> String {
        names[value] ?? "CK_RV 0x" + String(value, radix: 16)
    }
}
