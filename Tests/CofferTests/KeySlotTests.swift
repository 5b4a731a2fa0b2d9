import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Coffer

/// Key slots and version 3 key rings against vectors made by Python's
/// cryptography (scripts/make-keyslot-vectors.py), and their refusals.
@Suite struct KeySlotTests {
    struct Vectors: Decodable {
        struct Slot: Decodable {
            struct KDF: Decodable {
                let kind: String
                let logN: UInt8?, r: UInt8?, p: UInt8?, rounds: UInt32?
            }
            let title: String
            let kdf: KDF
            let secret_hex: String, salt_hex: String, nonce_hex: String, binding_hex: String
            let data_key_hex: String, slot_hex: String
        }
        struct Ring: Decodable {
            let file_hex: String, passphrase_hex: String, kek_hex: String, ring_id_hex: String
            let generation: UInt64
            let key_ids: [UInt32]
            let primary_id: UInt32
            let sealed_hex: String, context_hex: String, plaintext_hex: String
        }
        let slots: [Slot]
        let key_rings: [Ring]
    }

    static func vectors() throws -> Vectors {
        let url = Bundle.module.resourceURL!.appendingPathComponent("key-slots-v1/vectors.json")
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    static func secret(_ vector: Vectors.Slot) -> UnlockSecret {
        vector.kdf.kind == "key"
            ? .key(SymmetricKey(data: bytes(vector.secret_hex))) : .password(bytes(vector.secret_hex))
    }

    static func kdf(_ vector: Vectors.Slot) -> PasswordKDF? {
        switch vector.kdf.kind {
        case "scrypt": .scrypt(logN: vector.kdf.logN!, r: vector.kdf.r!, p: vector.kdf.p!)
        case "pbkdf2-sha256": .pbkdf2SHA256(rounds: vector.kdf.rounds!)
        default: nil
        }
    }

    @Test func slotVectorsUnwrapAndReproduce() throws {
        let vectors = try Self.vectors()
        #expect(vectors.slots.count == 5)
        for vector in vectors.slots {
            var bytes = Self.bytes(vector.slot_hex)[...]
            let slot = try KeySlot.read(from: &bytes)
            #expect(bytes.isEmpty, "\(vector.title)")
            #expect(slot.kdf == Self.kdf(vector), "\(vector.title)")
            let binding = Self.bytes(vector.binding_hex)
            let dataKey = try slot.unwrap(with: Self.secret(vector), binding: binding)
            #expect(dataKey.withUnsafeBytes { Array($0) } == Self.bytes(vector.data_key_hex), "\(vector.title)")
            // Made again by Coffer from the vector's salt and nonce: the same bytes.
            let salt = Self.bytes(vector.salt_hex)
            let base = try KeySlot.baseKey(try Self.secret(vector).material(), kdf: slot.kdf, salt: salt)
            let again = try KeySlot.wrap(
                SymmetricKey(data: Self.bytes(vector.data_key_hex)), base: base, kdf: slot.kdf, salt: salt,
                binding: binding, nonce: try AES.GCM._SIV.Nonce(data: Self.bytes(vector.nonce_hex)))
            #expect(again.serialized == Self.bytes(vector.slot_hex), "\(vector.title)")
            // Another container's binding, or a changed byte anywhere, does not open.
            #expect(throws: CofferError(.wrongPassword, "")) {
                try slot.unwrap(with: Self.secret(vector), binding: binding + [0])
            }
            let full = Self.bytes(vector.slot_hex)
            for position in [0, full.count / 2, full.count - 1] where position != 0 || slot.kdf != nil {
                var damaged = full
                damaged[position] ^= 0x01
                var rest = damaged[...]
                guard let read = try? KeySlot.read(from: &rest) else { continue }
                #expect(throws: CofferError.self) { try read.unwrap(with: Self.secret(vector), binding: binding) }
            }
        }
    }

    @Test func keyRingVectorOpensWithEitherSecret() throws {
        let vector = try Self.vectors().key_rings[0]
        let file = Self.bytes(vector.file_hex)
        let secrets: [UnlockSecret] = [
            .password(Self.bytes(vector.passphrase_hex)), .key(SymmetricKey(data: Self.bytes(vector.kek_hex))),
        ]
        for secret in secrets {
            let ring = try KeyRingFile(contents: file, secret: secret)
            #expect(ring.ringID == Self.bytes(vector.ring_id_hex))
            #expect(ring.generation == vector.generation)
            #expect(ring.slots.count == 2)
            #expect(ring.keyRing.keys.map(\.id) == vector.key_ids)
            #expect(ring.keyRing.primaryID == vector.primary_id)
            let opened = try ring.keyRing.open(Self.bytes(vector.sealed_hex), context: Self.bytes(vector.context_hex))
            #expect(Array(opened) == Self.bytes(vector.plaintext_hex))
        }
        #expect(KeyRingFile.peekGeneration(file)?.generation == vector.generation)
        #expect(throws: CofferError(.wrongPassword, "")) {
            try KeyRingFile(contents: file, secret: .password(Array("not it".utf8)))
        }
        #expect(throws: CofferError(.wrongPassword, "")) {
            try KeyRingFile(contents: file, secret: .key(SymmetricKey(size: .bits256)))
        }
        // The ring id is in every slot's binding and in the body's AAD.
        var moved = file
        moved[4] ^= 1
        #expect(throws: CofferError(.wrongPassword, "")) { try KeyRingFile(contents: moved, secret: secrets[1]) }
        var later = file
        later[27] ^= 1
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try KeyRingFile(contents: later, secret: secrets[1])
        }
    }

    @Test func slotsAddAndChange() throws {
        let passphrase = UnlockSecret.password(Array("pass".utf8))
        let kek = UnlockSecret.key(SymmetricKey(size: .bits256))
        let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)
        var file = try KeyRingFile(keyRing: KeyRing(), secret: passphrase, kdf: fast)
        #expect(throws: CofferError(.invalidArgument, "")) {
            try KeyRingFile(contents: try file.contents(), secret: kek)
        }
        try file.addSlot(for: kek)
        let both = try file.contents()
        #expect(try KeyRingFile(contents: both, secret: kek).keyRing.primaryID == file.keyRing.primaryID)
        #expect(try KeyRingFile(contents: both, secret: passphrase).slots.count == 2)
        // A change of secret drops the other slots and makes a new data key.
        let before = file.keyRing.primaryID
        try file.changeSecret(to: .password(Array("new".utf8)), kdf: fast)
        let changed = try file.contents()
        #expect(throws: CofferError(.invalidArgument, "")) { try KeyRingFile(contents: changed, secret: kek) }
        #expect(throws: CofferError(.wrongPassword, "")) { try KeyRingFile(contents: changed, secret: passphrase) }
        let reopened = try KeyRingFile(contents: changed, secret: .password(Array("new".utf8)))
        #expect(reopened.slots.count == 1 && reopened.keyRing.primaryID != before)
    }

    @Test func hostileSlotHeadersAreRefusedBeforeWork() throws {
        let file = Array(try KeyRingFile(keyRing: KeyRing(), secret: .key(SymmetricKey(size: .bits256))).contents())
        for count in [0, 9, 255] {
            var bad = file
            bad[28] = UInt8(count)
            #expect(throws: CofferError(.malformed, "")) {
                try KeyRingFile(contents: bad, secret: .key(SymmetricKey(size: .bits256)))
            }
        }
        var unknown = file
        unknown[29] = 9
        #expect(throws: CofferError(.unsupported, "")) {
            try KeyRingFile(contents: unknown, secret: .key(SymmetricKey(size: .bits256)))
        }
        for length in [0, 4, 20, 28, 29, 40, 105, file.count - 1] {
            #expect(throws: CofferError.self) {
                try KeyRingFile(contents: file.prefix(length), secret: .key(SymmetricKey(size: .bits256)))
            }
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try KeyRingFile(contents: file, secret: .key(SymmetricKey(size: .bits128)))
        }
        #expect(throws: CofferError(.invalidArgument, "")) { try KeyRingFile(contents: file, secret: .password([])) }
    }

    /// A KEK fetched on demand is fetched at each unlock, and its errors name where it lives.
    @Test func providedKeysAreFetchedWhenNeeded() throws {
        let kek = SymmetricKey(size: .bits256)
        let fetches = Locked(0)
        let provided = UnlockSecret.keyProvider(named: "the test's vault") {
            fetches.withLock { $0 += 1 }
            return kek
        }
        #expect(fetches.withLock { $0 } == 0)
        let file = try KeyRingFile(keyRing: KeyRing(), secret: provided).contents()
        _ = try KeyRingFile(contents: file, secret: .key(kek))
        _ = try KeyRingFile(contents: file, secret: provided)
        #expect(fetches.withLock { $0 } == 2)
        #expect("\(provided)".contains("the test's vault") && !"\(provided)".contains("Symmetric"))
        let failing = UnlockSecret.keyProvider(named: "an empty vault") { throw CofferError(.keyNotFound, "none") }
        #expect(throws: CofferError(.keyNotFound, "")) { try KeyRingFile(contents: file, secret: failing) }
    }

    /// A newer copy of the same ring opens with the data key already held
    /// (what a store does when another process rotated it); a copy of
    /// another ring, an older one, or one locked with a new secret does not.
    @Test func reopenedReadsNewerCopiesOnly() throws {
        let secret = UnlockSecret.key(SymmetricKey(size: .bits256))
        var file = try KeyRingFile(keyRing: KeyRing(), secret: secret)
        let first = try file.contents()
        let held = try KeyRingFile(contents: first, secret: secret)
        let newID = try file.update { try $0.rotate() }
        file.generation += 1
        let second = try file.contents()
        let reread = try held.reopened(second)
        #expect(reread.generation == 2 && reread.keyRing.primaryID == newID)
        #expect(throws: CofferError(.refused, "")) { try reread.reopened(first) }
        let other = try KeyRingFile(keyRing: KeyRing(), secret: secret).contents()
        #expect(throws: CofferError(.malformed, "")) { try held.reopened(other) }
        var damaged = Array(second)
        damaged[damaged.count - 1] ^= 1
        #expect(throws: CofferError(.refused, "")) { try held.reopened(damaged) }
        try file.changeSecret(to: .key(SymmetricKey(size: .bits256)))
        file.generation += 1
        #expect(throws: CofferError(.refused, "")) { try held.reopened(try file.contents()) }
    }
}
