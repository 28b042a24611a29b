#include "schedules/action.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(ActionTest, RoundTripsPyTorchStrings) {
  for (const char* s : {"0F1", "2I0", "2W0", "1B3", "0SEND_F1", "1RECV_F1", "1SEND_B1", "0RECV_B1", "12F345"}) {
    auto a = ParseAction(s);
    ASSERT_TRUE(a.ok()) << s << ": " << a.status().ToString();
    EXPECT_EQ(a->ToString(), s);
  }
}

TEST(ActionTest, ParsesFields) {
  auto a = ParseAction("  3SEND_B12 ");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->stage, 3);
  EXPECT_EQ(a->type, ActionType::kSendB);
  EXPECT_EQ(a->microbatch, 12);
}

TEST(ActionTest, RejectsWhatPyTorchsPrefixRegexWouldAccept) {
  for (const char* s : {"0BW0", "0F", "F0", "", "0X1", "0F1x", "0SEND1", "-1F0", "0 F1", "0f1"}) {
    auto a = ParseAction(s);
    EXPECT_FALSE(a.ok()) << "'" << s << "' parsed as " << (a.ok() ? a->ToString() : "");
    if (!a.ok()) EXPECT_NE(a.status().message().find("bad action"), std::string::npos);
  }
}

}  // namespace
}  // namespace pw
