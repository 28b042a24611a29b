// `pipewright tokenize`: text -> llm.c token file, once, for large corpora
// (`run --tokenizer` tokenizes text itself on every rank, up to
// kMaxRunTextBytes):
//   pipewright tokenize --tokenizer spm.model --data corpus.txt -o corpus.bin
//   pipewright tokenize --tokenizer hf-model/ --data docs.jsonl --text-field text -o corpus.bin
#include <cstdio>
#include <memory>
#include <string>

#include "executor/data/data.h"
#include "executor/data/tokenizer.h"
#include "launch/commands.h"

namespace pw::cli {

namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string data;
  std::string out;
  std::string text_field;  // JSON Lines: the member holding each document's text ("" = plain text)
};

Status RunTokenize(const TokenizeOptions& o) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<exec::Tokenizer> tok, exec::Tokenizer::Load(o.tokenizer));
  PW_ASSIGN_OR_RETURN(int64_t count, exec::WriteTokenFile(*tok, o.data, o.out, o.text_field));
  std::printf("tokenized %s with %s (%lld pieces): %lld %s tokens -> %s (llm.c header)\n", o.data.c_str(),
              o.tokenizer.c_str(), static_cast<long long>(tok->vocab_size()), static_cast<long long>(count),
              tok->vocab_size() > 65536 ? "uint32" : "uint16", o.out.c_str());
  return Status::Ok();
}

}  // namespace

void RegisterTokenizeCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", kTokenizeDescription);
  cmd->add_option("--tokenizer", o->tokenizer,
                  "SentencePiece .model, Hugging Face tokenizer.json, or a directory holding tokenizer.json")
      ->required();
  cmd->add_option("--data", o->data, "text file, or JSON Lines with --text-field (read in 1 MiB pieces)")->required();
  cmd->add_option("--text-field", o->text_field,
                  "--data is JSON Lines: one JSON object a line, this string member is a document; documents are "
                  "separated by the tokenizer's end-of-text token");
  cmd->add_option("-o,--output", o->out, "token file to write (replaced atomically)")->required();
  cmd->callback([o, &ctx] {
    Status st = RunTokenize(*o);
    if (!st.ok()) Fail(ctx, "tokenize", st);
  });
}

}  // namespace pw::cli
