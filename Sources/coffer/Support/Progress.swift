import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A progress bar on standard error, shown only when standard error is a
/// terminal and the input is a file large enough to be worth watching.
final class ProgressBar {
    private let total: Int64
    private let start = Date()
    private var lastDraw = Date.distantPast

    static let threshold: Int64 = 32 << 20

    /// nil when no bar should be shown.
    static func make(total: Int64?) -> ProgressBar? {
        guard let total, total >= threshold, isatty(STDERR_FILENO) == 1 else { return nil }
        return ProgressBar(total: total)
    }

    private init(total: Int64) { self.total = total }

    func update(_ done: Int64) {
        let now = Date()
        guard now.timeIntervalSince(lastDraw) >= 0.1 || done >= total else { return }
        lastDraw = now
        let fraction = min(1, Double(done) / Double(max(total, 1)))
        let width = 30
        let filled = Int(fraction * Double(width))
        let rate = Double(done) / max(now.timeIntervalSince(start), 0.001) / 1_048_576
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        StandardError.write(String(format: "\r[%@] %3d%% %7.1f MiB/s", bar, Int(fraction * 100), rate))
    }

    func finish() { StandardError.write("\r\u{1B}[K") }
}
