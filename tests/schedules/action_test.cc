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
    if (!a.ok()) {
      EXPECT_NE(a.status().message().find("bad action"), std::string::npos);
    }
  }
}

TEST(ActionTest, ReduceGradHasNoMicrobatch) {
  auto a = ParseAction(" 3REDUCE_GRAD ");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->stage, 3);
  EXPECT_EQ(a->type, ActionType::kReduceGrad);
  EXPECT_EQ(a->microbatch, -1);
  EXPECT_EQ(a->ToString(), "3REDUCE_GRAD");
  EXPECT_EQ(MakeAction(3, ActionType::kReduceGrad, 7), *a);  // microbatch forced to -1
  // Neither compute nor a point-to-point message.
  EXPECT_FALSE(IsCompute(a->type));
  EXPECT_FALSE(IsComm(a->type));
  EXPECT_FALSE(IsSend(a->type) || IsRecv(a->type));
  EXPECT_TRUE(IsReduceGrad(a->type));
  for (const char* s : {"3REDUCE_GRAD0", "REDUCE_GRAD", "3REDUCE_GRADx", "3REDUCE", "3REDUCE_GRAD-1"}) {
    auto bad = ParseAction(s);
    EXPECT_FALSE(bad.ok()) << "'" << s << "' parsed as " << (bad.ok() ? bad->ToString() : "");
  }
  EXPECT_NE(ParseAction("3REDUCE_GRAD0").status().message().find("REDUCE_GRAD takes no microbatch"), std::string::npos);
}

// A binary file read as a CSV (issue 16): the token is quoted escaped and
// cut, so the terminal never receives its raw bytes.
TEST(ActionTest, QuotesBinaryTokensEscapedAndCut) {
  const std::string elf = std::string(
                              "\x7F"
                              "ELF\x02\x01\x01\x1B[31m") +
                          std::string(1000, '\xAA');
  auto a = ParseAction(elf);
  ASSERT_FALSE(a.ok());
  const std::string& m = a.status().message();
  EXPECT_EQ(m.rfind("bad action '\\x7FELF\\x02\\x01\\x01\\x1B[31m\\xAA", 0), 0u) << m;
  EXPECT_NE(m.find("... (1012 bytes)'"), std::string::npos) << m;
  for (char c : m)
    EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7F)) << "raw byte " << int(static_cast<unsigned char>(c));
}

}  // namespace
}  // namespace pw
