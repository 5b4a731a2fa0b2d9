import Foundation

/// The bodies the client sends and reads, as docs/openapi.yaml defines
/// them: one `Codable` type per schema, its stored properties the schema's
/// properties and its optionals the ones not required.
/// (`KeyServerBodyTests` checks each against the document.)
enum KeyServerBody {
    /// `POST /v1/keys/{purpose}`'s optional body.
    struct KeyRequest: Codable, Equatable {
        var device: String?
    }

    /// `#/components/schemas/Key`.
    struct Key: Codable, Equatable {
        var purpose: String
        var version: Int
        var keyId: String
        /// The 256-bit key, base64.
        var key: String
        var device: String?
        /// How long the client may keep the key without asking again
        /// (absent from servers before it: the client's policy alone).
        var cacheSeconds: Int64?
    }

    /// `#/components/schemas/KeyInfo`: a rotation's answer.
    struct KeyInfo: Codable, Equatable {
        var purpose: String
        var version: Int
        var keyId: String
    }

    /// `#/components/schemas/Problem` (RFC 9457).
    struct Problem: Codable, Equatable {
        var type: String
        var title: String
        var status: Int
        var detail: String
        var code: String
        var requestId: String?
    }

    /// `#/components/requestBodies/Rotate`.
    struct Rotate: Codable, Equatable {
        var subject: String
        var purpose: String
        var device: String?
        var create: Bool?
    }

    /// `#/components/requestBodies/Retire`.
    struct Retire: Codable, Equatable {
        var subject: String
        var purpose: String
        var device: String?
        var minimumVersion: Int
    }

    /// `#/components/requestBodies/Shred`.
    struct Shred: Codable, Equatable {
        var subject: String
        var undoWindowSeconds: Int64?
        var create: Bool?
        var dryRun: Bool?
    }

    /// The answer of `POST /v1/admin/subjects/shred`.
    struct Shredding: Codable, Equatable {
        var subject: String
        var shredAt: String
        var dryRun: Bool?
        var storedVersions: Int?
    }

    /// The answer of `GET /v1/admin/subjects`.
    struct Subjects: Codable, Equatable {
        var subjects: [String]
        var next: String?
    }

    /// `#/components/requestBodies/UndoShred`.
    struct UndoShred: Codable, Equatable {
        var subject: String
    }

    /// `POST /v1/dev/token` of a development server (not in the contract:
    /// the route exists only under `serve --dev`).
    struct DevTokenRequest: Codable, Equatable {
        var subject: String
    }

    struct DevToken: Codable, Equatable {
        var token: String
    }

    /// No body at all (a `204`, or a request without one).
    struct Empty: Codable, Equatable {}
}
