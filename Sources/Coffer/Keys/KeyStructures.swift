import SwiftASN1

/// The DER structures Coffer reads and writes itself (swift-crypto reads
/// and writes the rest), parsed and serialized by swift-asn1:
///
/// - PKCS#8 `PrivateKeyInfo` / RFC 5958 `OneAsymmetricKey` and X.509
///   `SubjectPublicKeyInfo`, down to the algorithm OID and the key bytes,
///   so that the OID decides which key type reads them;
/// - SEC 1 (RFC 5915) `ECPrivateKey`, written as `openssl ec` writes it;
/// - ML-DSA-65's seed-only private key and its public key (RFC 9881).
///
/// Parsing is strict DER: a trailing byte, a non-minimal length or a
/// missing field is nil, never a partial reading.
enum KeyStructures {
    /// id-ml-dsa-65 (RFC 9881).
    static let mldsa65: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 3, 18]
    /// id-X25519 and id-Ed25519 (RFC 8410).
    static let x25519: ASN1ObjectIdentifier = [1, 3, 101, 110]
    static let ed25519: ASN1ObjectIdentifier = [1, 3, 101, 112]
    /// The RFC 8410 arc, 1.3.101: keys Coffer reads only by their OID.
    static func isRFC8410(_ oid: ASN1ObjectIdentifier) -> Bool {
        let components = oid.oidComponents
        return components.count == 4 && components.starts(with: [1, 3, 101])
    }

    /// A key structure's algorithm and its key bytes: the contents of a
    /// private key's OCTET STRING, or a public key's BIT STRING.
    struct Outer {
        let algorithm: ASN1ObjectIdentifier
        let key: ArraySlice<UInt8>
    }

    /// AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters ANY OPTIONAL }
    private static func algorithm(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ASN1ObjectIdentifier {
        guard let node = nodes.next() else { throw ASN1Error.invalidASN1Object(reason: "no AlgorithmIdentifier") }
        return try DER.sequence(node, identifier: .sequence) { fields in
            let oid = try ASN1ObjectIdentifier(derEncoded: &fields)
            _ = fields.next()  // parameters: NULL, a curve, or absent
            return oid
        }
    }

    /// PrivateKeyInfo (version 0) or OneAsymmetricKey (version 1):
    /// version, algorithm, privateKey, then optional attributes [0] and
    /// publicKey [1].
    static func pkcs8(_ der: [UInt8]) -> Outer? {
        try? DER.sequence(try DER.parse(der), identifier: .sequence) { fields in
            let version = try Int(derEncoded: &fields)
            guard version == 0 || version == 1 else {
                throw ASN1Error.invalidASN1Object(reason: "PKCS#8 version \(version)")
            }
            let oid = try algorithm(&fields)
            let key = try ASN1OctetString(derEncoded: &fields)
            // attributes [0] and publicKey [1], in that order if present;
            // the key type's own reader checks the public key.
            var next = fields.next()
            if next?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) { next = fields.next() }
            if next?.identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific) { next = fields.next() }
            guard next == nil else { throw ASN1Error.invalidASN1Object(reason: "an unknown PKCS#8 field") }
            return Outer(algorithm: oid, key: key.bytes)
        }
    }

    /// SubjectPublicKeyInfo ::= SEQUENCE { algorithm, subjectPublicKey BIT STRING }
    static func spki(_ der: [UInt8]) -> Outer? {
        try? DER.sequence(try DER.parse(der), identifier: .sequence) { fields in
            let oid = try algorithm(&fields)
            let key = try ASN1BitString(derEncoded: &fields)
            guard key.paddingBits == 0 else { throw ASN1Error.invalidASN1Object(reason: "a partial byte") }
            return Outer(algorithm: oid, key: key.bytes)
        }
    }

    /// SEC 1 (RFC 5915) ECPrivateKey with the curve named and the public
    /// key included: SEQUENCE { 1, OCTET STRING d, [0] curve, [1] BIT STRING point }.
    static func sec1(scalar: some Sequence<UInt8>, curve: ASN1ObjectIdentifier, point: some Sequence<UInt8>) throws
        -> [UInt8]
    {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { fields in
            try fields.serialize(1)
            try fields.serialize(ASN1OctetString(contentBytes: ArraySlice(scalar)))
            try fields.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) {
                try $0.serialize(curve)
            }
            try fields.serialize(explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific) {
                try $0.serialize(ASN1BitString(bytes: ArraySlice(point)))
            }
        }
        return serializer.serializedBytes
    }

    /// The seed of an ML-DSA-65 private key in its seed-only form:
    /// PKCS#8 whose privateKey holds `seed [0] IMPLICIT OCTET STRING (SIZE (32))`.
    static func mldsa65Seed(_ outer: Outer) -> ArraySlice<UInt8>? {
        guard outer.algorithm == mldsa65, let node = try? DER.parse(outer.key),
            let seed = try? ASN1OctetString(
                derEncoded: node, withIdentifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)),
            seed.bytes.count == 32
        else { return nil }
        return seed.bytes
    }

    /// The private key file of an ML-DSA-65 seed (PKCS#8 version 0, seed-only form).
    static func mldsa65PKCS8(seed: some Sequence<UInt8>) throws -> [UInt8] {
        var inner = DER.Serializer()
        try ASN1OctetString(contentBytes: ArraySlice(seed)).serialize(
            into: &inner, withIdentifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { fields in
            try fields.serialize(0)
            try fields.appendConstructedNode(identifier: .sequence) { try $0.serialize(mldsa65) }
            try fields.serialize(ASN1OctetString(contentBytes: inner.serializedBytes[...]))
        }
        return serializer.serializedBytes
    }

    /// The SPKI of an ML-DSA-65 public key (no parameters).
    static func mldsa65SPKI(publicKey: some Sequence<UInt8>) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { fields in
            try fields.appendConstructedNode(identifier: .sequence) { try $0.serialize(mldsa65) }
            try fields.serialize(ASN1BitString(bytes: ArraySlice(publicKey)))
        }
        return serializer.serializedBytes
    }
}
