import Coffer
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``URLSessionTransport``'s own session: the given session's
/// configuration, and a delegate that follows no redirect, stops an
/// answer at its limit as it streams, and hands authentication challenges
/// to the given session's delegate. A session's delegate, not a task's:
/// FoundationNetworking calls no task delegate.
final class GuardedSession: @unchecked Sendable {  // `session` is thread-safe; `transfers` is under a lock
    let session: URLSession
    private let transfers: Transfers

    init(like given: URLSession) {
        transfers = Transfers(forwardingTo: given.delegate)
        session = URLSession(configuration: given.configuration, delegate: transfers, delegateQueue: nil)
    }

    // The session holds its delegate until it is invalidated.
    deinit { session.finishTasksAndInvalidate() }

    /// The answer's body (at most `limit` bytes, else `TransportFailure.tooLarge`)
    /// and its response; a redirect is the answer, not followed.
    func data(for request: URLRequest, limit: Int) async throws -> (Data, URLResponse) {
        let task = session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfers.start(task, limit: limit, continuation)
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// Every task's body so far, limit and caller, by task.
    final class Transfers: NSObject, URLSessionDataDelegate, @unchecked Sendable {  // state under `lock`
        private struct Transfer {
            var body = Data()
            let limit: Int
            var tooLarge = false
            let continuation: CheckedContinuation<(Data, URLResponse), any Error>
        }
        private let lock = NSLock()
        private var running: [Int: Transfer] = [:]
        /// The given session's delegate, for authentication challenges.
        private let forward: (any URLSessionDelegate)?

        init(forwardingTo delegate: (any URLSessionDelegate)?) { forward = delegate }

        func start(
            _ task: URLSessionTask, limit: Int, _ continuation: CheckedContinuation<(Data, URLResponse), any Error>
        ) {
            lock.withLock { running[task.taskIdentifier] = Transfer(limit: limit, continuation: continuation) }
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let cancel = lock.withLock { () -> Bool in
                guard var transfer = running[dataTask.taskIdentifier], !transfer.tooLarge else { return false }
                if transfer.body.count + data.count > transfer.limit {
                    transfer.tooLarge = true
                    transfer.body = Data()
                } else {
                    transfer.body.append(data)
                }
                running[dataTask.taskIdentifier] = transfer
                return transfer.tooLarge
            }
            if cancel { dataTask.cancel() }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            guard let transfer = lock.withLock({ running.removeValue(forKey: task.taskIdentifier) }) else { return }
            if transfer.tooLarge {
                transfer.continuation.resume(throwing: TransportFailure.tooLarge(transfer.limit))
            } else if let error {
                transfer.continuation.resume(throwing: error)
            } else if let response = task.response {
                transfer.continuation.resume(returning: (transfer.body, response))
            } else {
                transfer.continuation.resume(throwing: TransportFailure("the answer is not HTTP"))
            }
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            #if canImport(FoundationNetworking)
            if let forward = forward as? any URLSessionTaskDelegate {
                forward.urlSession(session, task: task, didReceive: challenge, completionHandler: completionHandler)
                return
            }
            #else
            if let forward = forward as? any URLSessionTaskDelegate,
                forward.urlSession?(session, task: task, didReceive: challenge, completionHandler: completionHandler)
                    != nil
            {
                return
            }
            if let forward,
                forward.urlSession?(session, didReceive: challenge, completionHandler: completionHandler) != nil
            {
                return
            }
            #endif
            completionHandler(.performDefaultHandling, nil)
        }
    }
}
