#if Server
import Foundation

extension StorePostgresCLITests {
    /// PostgreSQL's own client on the test database: `sql`, stopping at the first error.
    static func psql(_ sql: String) throws -> CLI.Result {
        let url = URLComponents(string: environment["COFFER_TEST_POSTGRES_URL"]!)!
        let password = try String(contentsOfFile: environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"]!, encoding: .utf8)
        return try CLI.run(
            environment["COFFER_TEST_POSTGRES_BIN"]! + "/psql",
            [
                "-h", url.host!, "-p", "\(url.port!)", "-U", url.user!, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql,
                String(url.path.dropFirst()),
            ],
            environment: ["PGPASSWORD": password])
    }
}
#endif
