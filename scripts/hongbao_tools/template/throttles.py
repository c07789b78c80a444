"""The API's throttles in template.yaml, from template/resources.yaml's `throttles`: their
parameters and the HttpApi's route settings."""

from __future__ import annotations

from hongbao_tools.template.yamltext import TemplateError, folded


def parameters(self) -> str:
    """Each throttle's rate and burst parameters (`self`: the template's Builder)."""
    out = []
    routes = self.routes()
    for t, spec in self.data["throttles"].items():
        for r in spec["routes"]:
            if r not in routes:
                raise TemplateError(f"throttle {t}: {r!r} is no operation of functions.json")
        joined = " and ".join([", ".join(spec["routes"][:-1]), spec["routes"][-1]][-2:])
        if len(spec["routes"]) < 2:
            joined = spec["routes"][0]
        plural = "s" if len(spec["routes"]) > 1 else ""
        each = "each of " if plural else ""
        rate = (
            f"Requests per second admitted on {each}{joined} ({spec['why']}). See "
            "docs/deployment.md#throttling-cors-and-concurrency."
        )
        burst = f"Burst of the {joined} throttle{plural}."
        values = {"T": t, "Rate": spec["rate"], "Burst": spec["burst"]}
        values |= {"RateDescription": folded(rate), "BurstDescription": folded(burst)}
        out.append(self.proto("throttle-parameters", values))
    return "\n".join(out)


def route_settings(self) -> str:
    """The HttpApi's RouteSettings: each throttled route's limits."""
    out = []
    for t, spec in self.data["throttles"].items():
        for r in spec["routes"]:
            out += [
                f"{r}:",
                f"  ThrottlingRateLimit: !Ref {t}ThrottleRateLimit",
                f"  ThrottlingBurstLimit: !Ref {t}ThrottleBurstLimit",
            ]
    return "\n".join(out)
