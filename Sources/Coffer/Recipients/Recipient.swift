import Foundation

/// Something a file can be encrypted to: wraps a file key into stanzas.
///
/// Contract: return at least one stanza; generate fresh randomness for
/// every call (never reuse an ephemeral key or salt across files); never
/// put the file key or a secret in the clear into a stanza argument.
public protocol Recipient: Sendable {
    func wrap(_ fileKey: FileKey) throws -> [Stanza]
}

/// Something that can open files: finds its stanza and unwraps the file key.
///
/// Contract: ignore stanzas of other types and return nil when no stanza
/// is addressed to this identity or none decrypts (a wrong key is "not
/// mine", not an error). Throw `CofferError` with `.malformedHeader` when a
/// stanza of this identity's type breaks its rules (wrong argument count,
/// non-canonical encodings, wrong body length), and `.unsupported` for
/// parameters it refuses. The caller verifies the header MAC.
public protocol Identity: Sendable {
    func unwrap(_ stanzas: [Stanza]) throws -> FileKey?
}
