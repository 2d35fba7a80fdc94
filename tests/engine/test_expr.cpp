#include <gtest/gtest.h>

#include <map>

#include "engine/expr.hpp"

namespace perfwatch {

namespace {

class MapScope final : public EvalScope {
public:
    std::map<std::string, double> metrics, run;
    std::map<std::string, std::string> attributes;
    std::optional<double> metric(std::string_view n) const override {
        auto it = metrics.find(std::string(n));
        return it == metrics.end() ? std::nullopt : std::optional<double>(it->second);
    }
    std::optional<double> run_metric(std::string_view n) const override {
        auto it = run.find(std::string(n));
        return it == run.end() ? std::nullopt : std::optional<double>(it->second);
    }
    std::optional<std::string> attribute(std::string_view n) const override {
        auto it = attributes.find(std::string(n));
        return it == attributes.end() ? std::nullopt : std::optional<std::string>(it->second);
    }
};

Value eval(std::string_view src, const EvalScope& s) {
    std::vector<ExprError> errors;
    auto e = Expression::compile(src, errors);
    EXPECT_TRUE(e.has_value()) << src << ": " << (errors.empty() ? "" : errors[0].message);
    return e ? e->evaluate(s) : Value{};
}

std::vector<ExprError> errors_of(std::string_view src) {
    std::vector<ExprError> errors;
    (void)Expression::compile(src, errors);
    return errors;
}

}  // namespace

TEST(Expr, ArithmeticPrecedenceAndFunctions) {
    MapScope s;
    EXPECT_EQ(eval("1 + 2 * 3", s), Value(7.0));
    EXPECT_EQ(eval("(1 + 2) * 3", s), Value(9.0));
    EXPECT_EQ(eval("-2 * -3", s), Value(6.0));
    EXPECT_EQ(eval("max(1, 5, 3) - min(4, 2)", s), Value(3.0));
    EXPECT_EQ(eval("floor(2.7) + ceil(0.2) + abs(-1) + clamp(12, 0, 10)", s), Value(14.0));
    EXPECT_EQ(eval("sqrt(16)", s), Value(4.0));
}

TEST(Expr, UnitLiteralsBecomeBaseUnits) {
    MapScope s;
    EXPECT_EQ(eval("50us", s), Value(50000.0));
    EXPECT_EQ(eval("2ms", s), Value(2e6));
    EXPECT_EQ(eval("2MB", s), Value(2e6));
    EXPECT_EQ(eval("1KiB", s), Value(1024.0));
    EXPECT_EQ(eval("80%", s), Value(80.0));
    EXPECT_EQ(eval("1.5GHz", s), Value(1.5e9));
    const auto errors = errors_of("5parsecs");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].offset, 1u);
    EXPECT_NE(errors[0].message.find("unknown unit 'parsecs'"), std::string::npos);
}

TEST(Expr, MetricsAttributesAndRegexMatching) {
    MapScope s;
    s.metrics = {{"duration", 60000}, {"occupancy_theoretical", 50}};
    s.run = {{"gpu_time", 120000}};
    s.attributes = {{"name", "volta_sgemm_128x64"}};
    EXPECT_EQ(eval("duration > 50us and occupancy_theoretical < 80%", s), Value(true));
    EXPECT_EQ(eval("duration / run.gpu_time", s), Value(0.5));
    EXPECT_EQ(eval("name ~ \"gemm|conv\"", s), Value(true));
    EXPECT_EQ(eval("name !~ \"^volta\"", s), Value(false));
    EXPECT_EQ(eval("not (duration < 1ms)", s), Value(false));
}

TEST(Expr, MissingMetricsPropagateThreeValued) {
    MapScope s;
    s.metrics = {{"sm_throughput", 20}};
    EXPECT_EQ(eval("memory_throughput < 60", s), Value());
    EXPECT_EQ(eval("sm_throughput < 60 and memory_throughput < 60", s), Value());
    EXPECT_EQ(eval("sm_throughput > 60 and memory_throughput < 60", s), Value(false));
    EXPECT_EQ(eval("sm_throughput < 60 or memory_throughput < 60", s), Value(true));
    EXPECT_EQ(eval("present(memory_throughput)", s), Value(false));
    EXPECT_EQ(eval("sm_throughput / 0", s), Value());
}

// if(c, a, b) picks a branch without evaluating the other; a missing condition is missing; both
// branches share one type; present() inside it never makes the expression read the metric.
TEST(Expr, IfPicksABranchOfOneType) {
    MapScope s;
    s.metrics["vgpr_count"] = 128;
    EXPECT_EQ(std::get<std::string>(eval(R"(if(present(vgpr_count), "VGPRs", "registers"))", s)), "VGPRs");
    MapScope nvidia;
    EXPECT_EQ(std::get<std::string>(eval(R"(if(present(vgpr_count), "VGPRs", "registers"))", nvidia)), "registers");
    EXPECT_EQ(std::get<double>(eval("if(vgpr_count > 64, 1, sgpr_count)", s)), 1);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(eval("if(sgpr_count > 1, 1, 2)", s)));
    EXPECT_FALSE(errors_of(R"(if(true, 1, "text"))").empty());
    EXPECT_FALSE(errors_of("if(1, 2, 3)").empty());
    std::vector<ExprError> errors;
    const auto e = Expression::compile(R"(if(present(vgpr_count), "a", "b"))", errors);
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->metrics_read().empty());
}

// pow(x, y), one row of the function registry: typed, arity-checked, missing where the power is
// not a finite real number.
TEST(Expr, PowRaisesToAPowerAndIsMissingWhereThatIsNotFinite) {
    MapScope s;
    s.metrics["duration"] = 3;
    EXPECT_EQ(eval("pow(2, 10)", s), Value(1024.0));
    EXPECT_EQ(eval("pow(duration, 2) + 1", s), Value(10.0));
    EXPECT_EQ(eval("pow(4, 0.5)", s), Value(2.0));
    EXPECT_TRUE(std::holds_alternative<std::monostate>(eval("pow(0, -1)", s)));
    EXPECT_TRUE(std::holds_alternative<std::monostate>(eval("pow(-8, 0.5)", s)));
    EXPECT_TRUE(std::holds_alternative<std::monostate>(eval("pow(sgpr_count, 2)", s)));
    const auto arity = errors_of("pow(2)");
    ASSERT_EQ(arity.size(), 1u);
    EXPECT_NE(arity[0].message.find("pow() takes 2 argument(s), given 1"), std::string::npos) << arity[0].message;
    const auto type = errors_of(R"(pow(name, 2))");
    ASSERT_EQ(type.size(), 1u);
    EXPECT_NE(type[0].message.find("pow() needs a number, found a string"), std::string::npos) << type[0].message;
}

TEST(Expr, TypeErrorsAndUnknownNamesAreCompileErrors) {
    auto e1 = errors_of("name + 1");
    ASSERT_FALSE(e1.empty());
    EXPECT_NE(e1[0].message.find("needs a number, found a string"), std::string::npos);
    auto e2 = errors_of("duraton > 5us");
    ASSERT_EQ(e2.size(), 1u);
    EXPECT_EQ(e2[0].offset, 0u);
    EXPECT_NE(e2[0].message.find("unknown metric 'duraton'"), std::string::npos);
    auto e3 = errors_of("duration > ");
    ASSERT_FALSE(e3.empty());
    EXPECT_EQ(e3[0].offset, 11u);
    auto e4 = errors_of("frobnicate(1)");
    ASSERT_FALSE(e4.empty());
    EXPECT_NE(e4[0].message.find("unknown function"), std::string::npos);
    auto e5 = errors_of("name ~ \"(unclosed\"");
    ASSERT_FALSE(e5.empty());
    EXPECT_NE(e5[0].message.find("invalid regular expression"), std::string::npos);
    auto e6 = errors_of("metric(\"sm__x\") > 1 and attr(\"grid\") == 2");
    ASSERT_FALSE(e6.empty());
    EXPECT_NE(e6[0].message.find("cannot compare string with number"), std::string::npos);
}

TEST(Template, RendersExpressionsWithFormatSpecs) {
    MapScope s;
    s.metrics = {{"occupancy_theoretical", 33.333}, {"registers_per_thread", 128}};
    s.attributes = {{"occupancy_limiter", "registers"}};
    std::vector<ExprError> errors;
    auto t = Template::compile(
        "theoretical occupancy {occupancy_theoretical:.1f}% is limited by {occupancy_limiter} "
        "({registers_per_thread:.0f} per thread) {{literal}} {duration}",
        errors);
    ASSERT_TRUE(t) << errors[0].message;
    EXPECT_EQ(t->render(s),
              "theoretical occupancy 33.3% is limited by registers (128 per thread) {literal} n/a");
    EXPECT_EQ(t->metrics_read(), (std::set<std::string>{"duration", "occupancy_theoretical", "registers_per_thread"}));
}

TEST(Template, HumanTimeAndByteSpecs) {
    MapScope s;
    s.metrics = {{"duration", 239499166}, {"duration_mean", 812}, {"duration_total", 45600}};
    std::vector<ExprError> errors;
    auto t = Template::compile("{duration:time} {duration_mean:time} {duration_total:time} {duration * 10:bytes}", errors);
    ASSERT_TRUE(t) << errors[0].message;
    EXPECT_EQ(t->render(s), "239 ms 812 ns 45.6 us 2.39 GB");
}

TEST(Template, OptionalSegmentsVanishWhenAValueIsMissing) {
    MapScope s;
    s.metrics = {{"registers_per_thread", 64}};
    std::vector<ExprError> errors;
    auto t = Template::compile("{registers_per_thread:.0f} registers[[, {block_size:.0f} threads]][[ ({registers_per_thread} again)]]",
                               errors);
    ASSERT_TRUE(t) << errors[0].message;
    EXPECT_EQ(t->render(s), "64 registers (64 again)");
    errors.clear();
    EXPECT_FALSE(Template::compile("a [[ {duration} b", errors));
    EXPECT_NE(errors.at(0).message.find("not closed"), std::string::npos);
}

TEST(Template, BadSpecsAndBracesAreErrorsAtTheirOffset) {
    std::vector<ExprError> errors;
    EXPECT_FALSE(Template::compile("x {duration:.q} y", errors));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].offset, 12u);
    errors.clear();
    EXPECT_FALSE(Template::compile("open {duration", errors));
    EXPECT_NE(errors.at(0).message.find("unclosed"), std::string::npos);
    errors.clear();
    EXPECT_FALSE(Template::compile("a {bogus_metric}", errors));
    EXPECT_EQ(errors.at(0).offset, 3u);
}

}  // namespace perfwatch
