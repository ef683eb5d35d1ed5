// Keeps the library non-empty until its sources land; removed then.
namespace tandem::loadtest {
int placeholder() { return 0; }
}  // namespace tandem::loadtest
