// Times visit_all and collect over the paper workload's table (one thread).
#include <lfcore/atom_table.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>
static std::uint64_t sm(std::uint64_t& s){std::uint64_t z=(s+=0x9e3779b97f4a7c15ULL);z=(z^(z>>30))*0xbf58476d1ce4e5b9ULL;z=(z^(z>>27))*0x94d049bb133111ebULL;return z^(z>>31);}
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
int main(int argc,char**argv){
  const bool sized = argc < 2;
  std::vector<std::string> seqs; std::unordered_set<std::string> seen; std::uint64_t st=2016;
  while(seqs.size()<240000){std::string s(8+sm(st)%17,' ');for(char&c:s)c="acgt"[sm(st)&3]; if(seen.insert(s).second) seqs.push_back(s);}
  lfcore::atom_table t(sized ? 240000*30 : 0);
  std::string r;
  for(auto&s:seqs) for(std::size_t k=0;k<=s.size();++k){ std::string_view sv(s); auto a1=sv.substr(0,k),a2=sv.substr(k); t.intern(a1); t.intern(a2); r.assign(a2); r.append(a1); t.intern(r); }
  std::size_t n=0; double best=1e9;
  for(int rep=0;rep<3;rep++){ double t0=now(); n=0; t.for_each([&](lfcore::atom){++n;}); best=std::min(best,now()-t0);}
  double c0=now(); std::size_t got=t.collect(); double ct=now()-c0;
  std::printf("collect %zu %.1f ns/atom\n", got, ct*1e9/n);
  std::printf("%s visit_all %zu atoms %.1f ns/atom\n", sized?"sized":"unsized", n, best*1e9/n);
}
