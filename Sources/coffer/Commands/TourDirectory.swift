import Foundation

/// A tour's working folder: new, private (0700), under the temporary
/// directory, and removed when the tour ends unless it is kept, in which
/// case the tour says where it is.
final class TourDirectory {
    let url: URL
    private let keep: Bool

    /// Makes `coffer-<name>-XXXXXXXX` under the temporary directory.
    init(_ name: String, keep: Bool = false) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-\(name)-\(UUID().uuidString.prefix(8))")
        self.keep = keep
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// The path of `name` inside the folder.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Says where a kept folder is; the others are removed at once.
    func finish() {
        if keep {
            print("\nThe tour's files are in \(url.path)")
        } else {
            try? FileManager.default.removeItem(at: url)
        }
    }

    deinit { if !keep { try? FileManager.default.removeItem(at: url) } }
}
