//! The sandbox's CloudWatch Embedded Metric Format recorder: installed once at Init, flushed
//! as one JSON line on stdout after every invocation (the metric names are
//! [`crate::api::metrics`]'s).

use crate::api::metrics::MetricsSettings;

/// The sandbox's EMF collector (`metrics_cloudwatch_embedded`), installed by [`init_metrics`].
static COLLECTOR: std::sync::OnceLock<&'static metrics_cloudwatch_embedded::Collector> =
    std::sync::OnceLock::new();

/// Installs the CloudWatch Embedded Metric Format recorder once per sandbox: the namespace
/// and the dimension `Function` of `settings` (see [`crate::api::metrics`]). [`super::for_api_gateway`] and
/// [`super::scheduled::serve`] flush it after every invocation, with the Lambda request id as
/// the property `RequestId`, and counts `ColdStart` once (printed with the sandbox's first
/// invocation). A second call, or a recorder already installed, is logged and
/// ignored.
pub fn init_metrics(settings: &MetricsSettings) {
    use metrics_cloudwatch_embedded::Builder;
    if COLLECTOR.get().is_some() {
        return;
    }
    match Builder::new()
        .cloudwatch_namespace(settings.namespace.clone())
        .with_dimension("Function", settings.function.clone())
        .init()
    {
        Ok(collector) => {
            crate::api::metrics::describe();
            // Init installs the recorder once per sandbox: its first invocation prints this.
            crate::api::metrics::count(crate::api::metrics::COLD_START, 1);
            let _ = COLLECTOR.set(collector);
        }
        Err(e) => tracing::warn!(error = %e, "metrics recorder not installed"),
    }
}

/// Prints the metrics recorded since the last flush as one EMF line on stdout, with the
/// invocation's `request_id` as the property `RequestId` (nothing without a recorder, or when
/// no metric moved).
pub(crate) fn flush_metrics(request_id: Option<&str>) {
    let Some(collector) = COLLECTOR.get() else {
        return;
    };
    match request_id {
        Some(id) => collector.set_property("RequestId", id.to_string()),
        None => collector.remove_property("RequestId"),
    };
    if let Err(e) = collector.flush(std::io::stdout().lock()) {
        tracing::warn!(error = %e, "metrics not flushed");
    }
}
