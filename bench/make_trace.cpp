// Writes the large traces of bench/large_trace.hpp to disk, for timing the command line against zcat:
//   habitat-make-trace repeat FIXTURE OUT.json.gz STEPS     (e.g. 90 copies of a 3 MB step: 300 MB)
//   habitat-make-trace empty  FIXTURE OUT.json.gz STEPS     (STEPS empty steps, then the fixture's step)
//   habitat-make-trace long   FIXTURE OUT.json.gz COPIES    (one step holding COPIES copies of the fixture's)
#include <cstdio>
#include <exception>
#include <string>

#include "large_trace.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: habitat-make-trace repeat|empty|long FIXTURE OUT.json.gz STEPS\n");
    return 2;
  }
  try {
    const std::string mode = argv[1];
    const int steps = std::stoi(argv[4]);
    if (mode == "repeat") habitat::bench::repeat_step(argv[2], argv[3], steps);
    else if (mode == "empty") habitat::bench::many_empty_steps(argv[2], argv[3], steps);
    else if (mode == "long") habitat::bench::one_long_step(argv[2], argv[3], steps);
    else throw std::runtime_error("mode must be repeat, empty or long");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "habitat-make-trace: %s\n", e.what());
    return 2;
  }
}
