/// The shape shared by Coffer's "open enumerations": public structs with
/// static members (so that a later release can add a member without
/// breaking a caller's `switch`), backed by a package-only enum that the
/// package itself switches over exhaustively, and parsed and printed by
/// the enum's raw value.
///
/// A conforming type declares its `Kind`, stores it, and gets
/// `init?(rawValue:)`, `rawValue`, `description` and `allCases` from here.
package protocol OpenNameSet: RawRepresentable, CaseIterable, CustomStringConvertible where RawValue == String {
    associatedtype Kind: RawRepresentable & CaseIterable where Kind.RawValue == String
    /// For exhaustive switches inside the package.
    var kind: Kind { get }
    init(_ kind: Kind)
}

extension OpenNameSet {
    public init?(rawValue: String) {
        guard let kind = Kind(rawValue: rawValue) else { return nil }
        self.init(kind)
    }
    public var rawValue: String { kind.rawValue }
    public var description: String { kind.rawValue }
    public static var allCases: [Self] { Kind.allCases.map(Self.init) }
}
