//! A stack trace's root cause, so that one generic wrapper (Kafka Connect's "Failed to
//! deserialize data …") does not hide the causes beneath it: the innermost exception's type and
//! the template of its message.

use super::template::template;

/// The root cause of a stack trace (Java's last `Caused by:`, Python's first traceback of a
/// chain, .NET's last ` ---> `, Node's last `[cause]:`), or of a plain message its first line,
/// as `Type: <template of the message>`.
pub fn root_cause(trace: &str) -> String {
    let lines: Vec<&str> = trace.lines().map(str::trim_end).collect();
    let first = lines.iter().copied().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = if first.trim_start().starts_with("Traceback (most recent call last):") {
        python_root(&lines)
    } else if let Some(cause) = lines.iter().rev().find_map(|l| l.trim_start().strip_prefix("Caused by: ")) {
        cause
    } else if let Some(cause) = lines.iter().rev().find_map(|l| l.trim_start().strip_prefix("[cause]: ")) {
        cause
    } else {
        first
    };
    let line = line.rsplit(" ---> ").next().unwrap_or(line).trim();
    exception_line(line)
}

/// The exception line that ends the first traceback of a Python chain (the original error:
/// the ones after it were raised while handling it).
fn python_root<'a>(lines: &[&'a str]) -> &'a str {
    let start = lines.iter().position(|l| l.trim_start().starts_with("Traceback (most recent call last):")).unwrap_or(0);
    lines[start + 1..].iter().copied().find(|l| !l.is_empty() && !l.starts_with(' ') && !l.starts_with('\t')).unwrap_or("")
}

/// `Type: message` with the message templated; a line without a type is templated whole.
fn exception_line(line: &str) -> String {
    if let Some((kind, message)) = line.split_once(':') {
        let is_type = !kind.is_empty() && kind.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '$' | '-' | '+' | '`'));
        if is_type {
            let message = message.trim();
            return if message.is_empty() { kind.to_string() } else { format!("{kind}: {}", template(message)) };
        }
    }
    template(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_takes_the_last_caused_by() {
        let trace = "org.apache.kafka.connect.errors.DataException: Failed to deserialize data for topic payments to Avro: \n\
            \tat io.confluent.connect.avro.AvroConverter.toConnectData(AvroConverter.java:148)\n\
            \tat org.apache.kafka.connect.runtime.WorkerSinkTask.convertValue(WorkerSinkTask.java:545)\n\
            Caused by: org.apache.kafka.common.errors.SerializationException: Error retrieving Avro value schema for id 10471\n\
            \tat io.confluent.kafka.serializers.AbstractKafkaAvroDeserializer.deserialize(AbstractKafkaAvroDeserializer.java:209)\n\
            \t... 13 more\n\
            Caused by: io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: Schema 10471 not found; error code: 40403\n\
            \tat io.confluent.kafka.schemaregistry.client.rest.RestService.sendHttpRequest(RestService.java:236)\n\
            \t... 18 more\n";
        assert_eq!(root_cause(trace), "io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: Schema <*> not found; error code: <*>");
        let magic = "org.apache.kafka.connect.errors.DataException: Failed to deserialize data for topic payments to Avro: \n\tat x.y(Z.java:1)\nCaused by: org.apache.kafka.common.errors.SerializationException: Unknown magic byte!\n";
        assert_eq!(root_cause(magic), "org.apache.kafka.common.errors.SerializationException: Unknown magic byte!");
        assert_eq!(root_cause("java.lang.NullPointerException\n\tat a.b(C.java:3)"), "java.lang.NullPointerException");
    }

    #[test]
    fn python_takes_the_first_traceback_of_a_chain() {
        let trace = "Traceback (most recent call last):\n  File \"/var/task/app.py\", line 12, in handler\n    sku = item['sku']\nKeyError: 'sku'\n\n\
                     During handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"/var/task/app.py\", line 14, in handler\n    raise ValueError(f'bad item {item}')\nValueError: bad item 17\n";
        assert_eq!(root_cause(trace), "KeyError: <*>");
    }

    #[test]
    fn dotnet_node_and_plain_messages() {
        assert_eq!(root_cause("System.InvalidOperationException: Order 42 failed ---> System.TimeoutException: Timed out after 30000 ms\n   at A.B()"), "System.TimeoutException: Timed out after <*>");
        assert_eq!(root_cause("Error: outer\n    at f (/app/x.js:1:2) {\n  [cause]: TypeError: Cannot read properties of undefined (reading 'sku')\n}"), "TypeError: Cannot read properties of undefined (reading <*>)");
        assert_eq!(root_cause("panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\nmain.main()"), "panic: runtime error: index out of range <*> with length <*>");
        assert_eq!(root_cause("connection refused by 10.0.0.7"), "connection refused by <*>");
        assert_eq!(root_cause(""), "");
    }
}
