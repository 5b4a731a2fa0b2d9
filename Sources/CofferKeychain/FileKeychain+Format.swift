import Coffer
import Crypto
import CryptoExtras
import Foundation

// FileKeychain's bytes: parsing and unlocking versions 2 (KeySlot) and 1,
// and making key slots (format in FileKeychain.swift, docs/keychain.md and
// docs/key-slots.md).
extension FileKeychain {
    /// What every slot of a version 2 keychain is bound to.
    static let slotBinding = magic + [version]

    /// A slot wrapping `dataKey` for `secret`, with errors as keychain errors.
    static func slot(for secret: UnlockSecret, dataKey: SymmetricKey, kdf: PasswordKDF) throws -> KeySlot {
        do { return try KeySlot.wrap(dataKey, for: secret, kdf: kdf, binding: slotBinding) } catch let error
            as CofferError
        {
            throw KeychainError(.invalidArgument, error.description)
        }
    }

    func parse(_ bytes: [UInt8], _ cache: inout Cache) throws -> Loaded {
        guard bytes.count >= 14, Array(bytes.prefix(4)) == FileKeychain.magic else {
            throw KeychainError(.corrupted, "\(path) is not a Coffer keychain (or its first bytes are damaged)")
        }
        guard bytes[4] == FileKeychain.version || bytes[4] == 1 else {
            throw KeychainError(
                .unsupportedVersion,
                "keychain format version \(bytes[4]) is not supported (only 1 and \(FileKeychain.version))")
        }
        let generation = bytes[5..<13].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let slotCount = Int(bytes[13])
        guard slotCount <= FileKeychain.maximumSlots else {
            throw KeychainError(
                .corrupted,
                "\(path) declares \(slotCount) key slots; at most \(FileKeychain.maximumSlots) are read (refused before any work)"
            )
        }
        guard slotCount >= 1 else { throw KeychainError(.corrupted, "\(path) has no key slot") }
        let headerEnd: Int
        if bytes[4] == 1 {
            headerEnd = 14 + slotCount * Self.legacySlotSize
        } else {
            var rest = bytes[14...]
            do {
                for _ in 0..<slotCount { _ = try KeySlot.read(from: &rest) }
            } catch let error as CofferError {
                throw KeychainError(error.code == .unsupported ? .unsupportedVersion : .corrupted, "\(path): \(error)")
            }
            headerEnd = rest.startIndex
        }
        guard bytes.count >= headerEnd + 28 else { throw KeychainError(.corrupted, "\(path) is truncated") }
        let slotBytes = Array(bytes[14..<headerEnd])
        let dataKey: SymmetricKey
        let slots: [KeySlot]
        if let cached = cache.cached, cached.slotBytes == slotBytes {
            (dataKey, slots) = (cached.dataKey, cached.slots)
        } else {
            (dataKey, slots) =
                bytes[4] == 1
                ? try unlockLegacy(slotBytes, count: slotCount) : try unlock(slotBytes, count: slotCount)
            cache.cached = (slotBytes, dataKey, slots)
        }
        let body: Data
        do {
            body = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: bytes[headerEnd...]), using: dataKey,
                authenticating: Array(bytes[..<headerEnd]))
        } catch {
            throw KeychainError(.corrupted, "\(path) does not authenticate: it was damaged or changed outside Coffer")
        }
        do {
            return (try JSONDecoder().decode(ItemStore.self, from: body), slots, dataKey, generation)
        } catch {
            throw KeychainError(.corrupted, "\(path)'s items do not parse")
        }
    }

    /// The data key from version 2 slots.
    func unlock(_ slotBytes: [UInt8], count: Int) throws -> (SymmetricKey, [KeySlot]) {
        var rest = slotBytes[...]
        let slots = try (0..<count).map { _ in try KeySlot.read(from: &rest) }
        do {
            let (dataKey, _) = try KeySlot.unwrap(
                slots, with: secret, binding: FileKeychain.slotBinding, maximumTried: FileKeychain.maximumSlots)
            return (dataKey, slots)
        } catch let error as CofferError {
            throw keychainError(error)
        }
    }

    func keychainError(_ error: CofferError) -> KeychainError {
        switch error.code {
        case .wrongPassword:
            KeychainError(
                .authenticationFailed, "wrong passphrase or key file for \(path) (or its key slot is damaged)")
        case .invalidArgument:
            KeychainError(
                .authenticationFailed,
                "\(path) is locked with \(secret.isPassword ? "a key file, not a passphrase" : "a passphrase, not a key file")"
            )
        default: KeychainError(.corrupted, "\(path): \(error)")
        }
    }

    // MARK: version 1

    /// Version 1 slots: kind (0 key file, 1 scrypt) ‖ log2 N, r, p ‖ salt 16
    /// ‖ nonce 12 ‖ AES-256-GCM-SIV(data key) ‖ tag 16, with associated
    /// data "CKC1 slot" ‖ kind ‖ parameters ‖ salt. The slot key is scrypt's
    /// output, or HKDF-SHA-256(key, salt, "coffer keychain v1 key file slot").
    static let legacySlotSize = 1 + 3 + 16 + 60

    /// The data key from version 1 slots, and the version 2 slot that
    /// replaces the one that opened (same salt and KDF output, so the
    /// passphrase is stretched once).
    func unlockLegacy(_ slotBytes: [UInt8], count: Int) throws -> (SymmetricKey, [KeySlot]) {
        let material: UnlockSecret.Material
        do { material = try secret.material() } catch let error as CofferError { throw keychainError(error) }
        var lastError = KeychainError(.authenticationFailed, "no key slot of \(path) opens with this secret")
        for index in 0..<count {
            let slot = Array(slotBytes[(index * Self.legacySlotSize)..<((index + 1) * Self.legacySlotSize)])
            let (kind, parameters, salt) = (slot[0], Array(slot[1..<4]), Array(slot[4..<20]))
            let kdf: PasswordKDF? = kind == 1 ? .scrypt(logN: parameters[0], r: parameters[1], p: parameters[2]) : nil
            let key: SymmetricKey
            switch (material, kind) {
            case (.password(let password), 1):
                do { key = try kdf!.derive(password: password.revealed(), salt: salt) } catch let error
                    as CofferError
                {
                    throw KeychainError(.corrupted, "\(path): \(error)")
                }
            case (.key(let file), 0):
                key = HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: file, salt: salt, info: Array("coffer keychain v1 key file slot".utf8),
                    outputByteCount: 32)
            case (.password, 0), (.key, 1):
                lastError = keychainError(CofferError(.invalidArgument, "the other kind"))
                continue
            default:
                throw KeychainError(.unsupportedVersion, "\(path): key slot kind \(kind) is not supported")
            }
            guard
                let unwrapped = try? AES.GCM._SIV.open(
                    AES.GCM._SIV.SealedBox(combined: slot[20...]), using: key,
                    authenticating: Array("CKC1 slot".utf8) + [kind] + parameters + salt)
            else {
                lastError = keychainError(CofferError(.wrongPassword, "no slot opens"))
                continue
            }
            let dataKey = SymmetricKey(data: unwrapped)
            let base: SymmetricKey
            if case .key(let file) = material { base = file } else { base = key }
            let replacement = try KeySlot.wrap(
                dataKey, base: base, kdf: kdf,
                salt: kdf == nil
                    ? SymmetricKey(size: .bits128).withUnsafeBytes {
                        Array($0)
                    } : salt, binding: FileKeychain.slotBinding, nonce: AES.GCM._SIV.Nonce())
            return (dataKey, [replacement])
        }
        throw lastError
    }
}
