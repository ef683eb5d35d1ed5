#include <gtest/gtest.h>
TEST(TinySpeculation, Placeholder) {}
