#if Server
import Testing

@testable import CofferStorePostgres

/// The store's `?` SQL as PostgreSQL receives it; no server needed.
@Suite struct PostgresTranslationTests {
    @Test func placeholdersAreNumberedOutsideQuotesOnly() {
        #expect(
            PostgresStoreConnection.translate("SELECT '?', \"a?\" FROM t WHERE x = ? AND y IS ? AND z = ?")
                == "SELECT '?', \"a?\" FROM t WHERE x = $1 AND y IS NOT DISTINCT FROM $2 AND z = $3")
    }

    @Test func theCacheGivesWhatATranslationGivesAndStaysBounded() {
        let limit = PostgresStoreConnection.translationsKept
        for round in 0..<2 {
            for number in 0..<(limit + 50) {
                let sql = "INSERT INTO t\(number) (a, b) VALUES (?, ?), (?, ?)"
                #expect(
                    PostgresStoreConnection.translate(sql) == "INSERT INTO t\(number) (a, b) VALUES ($1, $2), ($3, $4)",
                    "round \(round)")
                #expect(PostgresStoreConnection.translate(sql) == PostgresStoreConnection.translation(of: sql))
            }
        }
        #expect(PostgresStoreConnection.cachedTranslations <= limit)
    }
}
#endif
