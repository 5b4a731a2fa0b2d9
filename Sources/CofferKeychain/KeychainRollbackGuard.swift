import Coffer
import Foundation

/// Rollback high-water marks kept as generic-password items in a keychain
/// (service `org.coffer.rollback-guard`, the mark's key as account, eight
/// big-endian bytes as data): for a key ring whose KEK lives in the same
/// keychain, the mark sits beside the KEK, out of reach of whoever can
/// only write the ring file.
public struct KeychainRollbackGuard: RollbackGuard {
    public static let service = "org.coffer.rollback-guard"
    public let keychain: any Keychain
    /// When the marks can be read: after the first unlock, on this device
    /// only, by default, so that a background task can write and no device
    /// backup carries a mark back with an older copy of what it guards.
    public let accessibility: Accessibility

    public init(keychain: any Keychain, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly) {
        self.keychain = keychain
        self.accessibility = accessibility
    }

    public func highWaterMark(for key: String) throws -> UInt64? {
        do {
            let bytes = try keychain.copyData(.password(service: Self.service, account: key)).revealed()
            guard bytes.count == 8 else {
                throw KeychainError(.corrupted, "the rollback mark for \(key) is not 8 bytes")
            }
            return bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        } catch let error as KeychainError where error.code == .itemNotFound {
            return nil
        }
    }

    public func raise(_ key: String, to generation: UInt64) throws {
        guard (try highWaterMark(for: key) ?? 0) < generation else { return }
        try reset(key, to: generation)
    }

    public func reset(_ key: String, to generation: UInt64) throws {
        let data = SecretBytes(withUnsafeBytes(of: generation.bigEndian, Array.init))
        do {
            try keychain.add(
                .password(
                    service: Self.service, account: key, label: "Coffer rollback mark", accessibility: accessibility),
                data: data)
        } catch let error as KeychainError where error.code == .duplicateItem {
            try keychain.update(.password(service: Self.service, account: key), data: data)
        }
    }
}
