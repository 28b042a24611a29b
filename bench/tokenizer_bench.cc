// Tokenize throughput of a tokenizer (--tokenizer as `pipewright tokenize`
// takes it) on one text file, one thread: MB/s of text bytes for
//   whole: the file as one document, the `pipewright tokenize` path
//          (TokenizeTextFile into a temporary file: SafeCut pieces);
//   lines: Encode of each line on its own (the work of HF's encode_batch on
//          the file's lines).
// bench/tokenizer_bench.sh runs it beside HF tokenizers (tokenizer_bench.py)
// on the same file and core; results in bench/results/tokenizers.md.
//   tokenizer_bench TOKENIZER TEXT [REPEATS]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "executor/data/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER TEXT [REPEATS]\n", argv[0]);
    return 2;
  }
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  auto tok = pw::exec::Tokenizer::Load(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
    return 1;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<std::string> lines;
  for (size_t b = 0, nl; b < text.size(); b = nl + 1) {
    nl = text.find('\n', b);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(
        text.substr(b, nl - b + (nl < text.size() ? 1 : 0)));  // with its newline, as Python's splitlines(True)
  }
  using Clock = std::chrono::steady_clock;
  double best_whole = 1e30, best_lines = 1e30;
  int64_t whole_tokens = 0, line_tokens = 0;
  for (int r = 0; r < repeats; ++r) {
    char tmpl[] = "/tmp/pw-tokbench-XXXXXX";
    const int fd = mkstemp(tmpl);
    unlink(tmpl);
    auto t0 = Clock::now();
    auto n = pw::exec::TokenizeTextFile(**tok, argv[2], 4, fd, 0);
    best_whole = std::min(best_whole, std::chrono::duration<double>(Clock::now() - t0).count());
    close(fd);
    if (!n.ok()) {
      std::fprintf(stderr, "%s\n", n.status().ToString().c_str());
      return 1;
    }
    whole_tokens = *n;
    t0 = Clock::now();
    int64_t count = 0;
    for (const std::string& l : lines) count += static_cast<int64_t>((*tok)->Encode(l).size());
    best_lines = std::min(best_lines, std::chrono::duration<double>(Clock::now() - t0).count());
    line_tokens = count;
  }
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::printf("pipewright %s: %.2f MB, whole %lld tokens %.3f s %.2f MB/s; lines %lld tokens %.3f s %.2f MB/s\n",
              (*tok)->kind(), mb, static_cast<long long>(whole_tokens), best_whole, mb / best_whole,
              static_cast<long long>(line_tokens), best_lines, mb / best_lines);
  return 0;
}
